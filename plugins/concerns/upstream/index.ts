import type { GatewayConfig } from '../../foundation/config/types.js'
import type { Catalogue } from '../../foundation/errors/index.js'
import { passthrough, type TranslatorFor } from '../metering/index.js'
import type { ModelCatalogue } from '../models/catalogue.js'
import type { GatewayPlugin } from '../../foundation/pipeline/plugin.js'
import { forward, type ForwardDeps } from './forward-phase.js'
import type { UpstreamPlan } from './plan.js'
import { openUpstreams, type Upstreams } from './providers.js'
import type { UpstreamView } from './view.js'

export { createStatusReader, type StatusReader } from './status-reader.js'
export { createUpstreamView, upstreamAdminRoutes, type UpstreamView, type UpstreamStatus } from './view.js'

export type { UpstreamPlan } from './plan.js'
export { openUpstreams, type Upstreams } from './providers.js'

/** The upstream concern's slice of the gateway's plan. */
export interface UpstreamPlanSlice {
  readonly config: Pick<GatewayConfig, 'server'>
  readonly catalogue: Catalogue
  readonly upstream: UpstreamPlan
}

export interface UpstreamPluginOptions {
  plan: UpstreamPlanSlice
  models: ModelCatalogue
  /** The plan's upstreams, opened by the caller, who closes them (the jobs concern polls through the same pools); absent: the plugin opens and closes its own. */
  upstreams?: Upstreams
  /** Injected randomness for the weighted pick of a pool member. */
  random?: () => number
  /**
   * Each operation's translator (request edits, meter; a job's target and answer); default: the
   * passthrough translator for every operation (no job routes then).
   */
  translatorFor?: TranslatorFor
  /** Filled with a reader of the circuit state (admin API). */
  view?: UpstreamView
  /** Where a failed active health check is reported (never with credentials). */
  onHealthCheckError?: (provider: string, err: unknown) => void
}

const everyOperationPassthrough: TranslatorFor = () => passthrough

/**
 * forward: picks a pool member, sends the request untouched (model rewritten to the upstream's
 * name), relays the answer through the meter, and tries the model's fallbacks while the upstream
 * fails before the first byte. What an operation edits, meters and answers is its translator's
 * (`translatorFor`; job routes: the jobs concern's, which names the target and writes the answer).
 */
export function upstreamPlugin (opts: UpstreamPluginOptions): GatewayPlugin {
  const { config } = opts.plan
  const owned = opts.upstreams === undefined
  const upstreams = opts.upstreams ?? openUpstreams(opts.plan.upstream)
  const deps: ForwardDeps = {
    upstreams,
    models: opts.models,
    catalogue: opts.plan.catalogue,
    headerFilter: { strip: opts.plan.upstream.stripHeaders },
    drainTimeoutMs: config.server.drain_timeout_ms,
    writeStallMs: config.server.client_write_stall_ms,
    random: opts.random ?? Math.random,
    retry: opts.plan.upstream.retry,
    translatorFor: opts.translatorFor ?? everyOperationPassthrough
  }
  if (opts.view) opts.view.read = () => upstreams.status()
  return {
    name: 'upstream',
    setup: () => { upstreams.startHealthChecks(opts.onHealthCheckError) },
    forward: async (ctx, req, reply, control) => { await forward(deps, ctx, req, reply, control) },
    close: async () => { if (owned) await upstreams.close() }
  }
}
