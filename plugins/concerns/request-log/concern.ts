import { concern } from '../../foundation/pipeline/concern.js'
import type { RequestLogDeps } from './index.js'

/** One request log row per request, queued and written in batches. */
export const requestLogConcern = concern({
  name: 'request-log',
  plugin: async (parts: { readonly services: { readonly requestLog: RequestLogDeps['writer'], readonly clock: RequestLogDeps['clock'] } }) =>
    (await import('./index.js')).requestLogPlugin({ writer: parts.services.requestLog, clock: parts.services.clock })
})
