import type { FastifyBaseLogger } from 'fastify'
import type { GatewayConfig } from '../../foundation/config/types.js'
import { concern } from '../../foundation/pipeline/concern.js'

/** One access log line per request, unless `observability.access_log.enabled` is false (then it is not listed). */
export const accessLogConcern = concern({
  name: 'access-log',
  plugin: async (parts: { readonly plan: { readonly config: Pick<GatewayConfig, 'observability'> }, readonly log: FastifyBaseLogger }) => {
    const accessLog = parts.plan.config.observability?.access_log
    if (accessLog !== undefined && !accessLog.enabled) return undefined
    return (await import('./index.js')).accessLogPlugin(parts.log, accessLog ?? { enabled: true, level: 'info' })
  }
})
