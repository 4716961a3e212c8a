import { gatewayError } from '../errors/index.js'
import type { GatewayPlugin } from '../pipeline/plugin.js'
import { registerBodyParsers, type BodyOptions } from './body.js'
import { refuseDeferredWork } from './deferred-work.js'
export type { ParsedBody } from '../shapes/index.js'

export { bodyOptionsOf, type BodyOptions } from './body.js'

/**
 * `bodies` is the plan's slice (bodyOptionsOf).
 * setup: the body parsers (JSON and multipart, keeping the exact bytes; per-route size caps,
 * nesting depth, part counts and a body deadline, checked while the body arrives). resolve: the
 * body kind the route accepts, per-item size caps of multipart files, and deferred work the
 * route refuses (`background: true`).
 */
export function requestPlugin (bodies: BodyOptions): GatewayPlugin {
  return {
    name: 'request',
    setup (app) {
      registerBodyParsers(app, bodies)
    },
    resolve (ctx) {
      if (ctx.model !== null) return // a fallback: the body was checked for the primary
      const accepted = ctx.plan.body
      const body = ctx.body
      if (!body) {
        if (accepted.includes('none')) return
        throw gatewayError('REQUEST_INVALID', { detail: 'A request body is required.' })
      }
      if (!accepted.includes(body.kind)) throw gatewayError('REQUEST_MEDIA_TYPE_UNSUPPORTED')
      if (body.kind === 'multipart') {
        for (const file of body.summary.files) {
          const cap = ctx.plan.itemLimits[file.field]
          if (cap !== undefined && file.size > cap) throw gatewayError('REQUEST_CONTENT_TOO_LARGE', { param: file.field })
        }
      }
      refuseDeferredWork(ctx)
    }
  }
}
