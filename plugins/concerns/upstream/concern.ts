import type { GatewayConfig } from '../../foundation/config/types.js'
import type { Catalogue } from '../../foundation/errors/index.js'
import { concern } from '../../foundation/pipeline/concern.js'
import type { ModelCatalogue } from '../models/index.js'
import type { TranslatorFor } from '../metering/index.js'
import { compileUpstreamPlan, type UpstreamPlan } from './plan.js'
import type { Upstreams } from './providers.js'
import type { UpstreamView } from './view.js'

/** What the upstream plugin is built from: the plan's upstream slice, the open pools, each operation's translator. */
export interface UpstreamParts {
  readonly plan: { readonly config: Pick<GatewayConfig, 'server'>, readonly catalogue: Catalogue, readonly upstream: UpstreamPlan }
  readonly models: ModelCatalogue
  readonly upstreams: Upstreams
  readonly translatorFor: TranslatorFor
  readonly random?: (() => number) | undefined
  readonly upstreamView?: UpstreamView | undefined
  readonly log: { warn: (fields: object, message: string) => void }
}

/** The upstream: pools, retries, fallbacks and the relay of the answer through its meter. */
export const upstreamConcern = concern({
  name: 'upstream',
  plan: { slice: 'upstream', compile: (config) => compileUpstreamPlan(config) },
  plugin: async (parts: UpstreamParts) => (await import('./index.js')).upstreamPlugin({
    plan: parts.plan,
    models: parts.models,
    upstreams: parts.upstreams,
    translatorFor: parts.translatorFor,
    ...(parts.random ? { random: parts.random } : {}),
    ...(parts.upstreamView ? { view: parts.upstreamView } : {}),
    onHealthCheckError: (provider, err) => { parts.log.warn({ provider, code: (err as { code?: string }).code }, 'upstream health check failed') }
  })
})
