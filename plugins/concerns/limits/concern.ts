import type { FastifyBaseLogger } from 'fastify'
import type { GatewayConfig } from '../../foundation/config/types.js'
import { concern } from '../../foundation/pipeline/concern.js'
import type { Clock } from '../../foundation/store/clock.js'
import { compilePolicies, type Policies } from './policy.js'
import type { LimitsDeps } from './index.js'

/** Rates, concurrent streams and connections per address, by tier and key policy (after auth, before the body is read). */
export const limitsConcern = concern({
  name: 'limits',
  plan: { slice: 'limits', compile: (config) => compilePolicies(config.limits) },
  plugin: async (parts: {
    readonly plan: { readonly config: Pick<GatewayConfig, 'server' | 'limits'>, readonly limits: Policies }
    readonly services: { readonly clock: Clock, readonly limitsRedis?: LimitsDeps['redis'] }
    readonly log: FastifyBaseLogger
  }) => (await import('./index.js')).limitsPlugin({
    server: parts.plan.config.server,
    limits: parts.plan.config.limits,
    policies: parts.plan.limits,
    clock: parts.services.clock,
    redis: parts.services.limitsRedis,
    log: parts.log
  })
})
