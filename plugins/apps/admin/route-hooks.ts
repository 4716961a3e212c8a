// What every admin route gets, whoever registers it (this folder, the upstream view, the config
// routes, the console's outbox): a schema for its query string and path parameters, an
// access-log line, and the connection closed when a refusal leaves a body unread.
import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify'
import { bodyUnread } from '../../foundation/pipeline/body-unread.js'
import { NO_QUERY, paramsOf } from './schemas.js'

/** The message of every admin access-log line (`msg`), to filter on. */
export const ADMIN_ACCESS_LOG_MESSAGE = 'admin request'

const PARAM = /:([A-Za-z_][A-Za-z0-9_]*)/g

/**
 * A route registered without a query-string schema takes no query parameter (any one is a 400
 * naming it), and one without a params schema gets each of its path parameters checked as an id:
 * a bad value is refused before a handler runs, never a 500 from the store.
 */
export function schemaEveryRoute (app: FastifyInstance): void {
  app.addHook('onRoute', (route: RouteOptions) => {
    const schema = { ...(route.schema ?? {}) }
    schema.querystring ??= NO_QUERY
    const names = [...route.url.matchAll(PARAM)].map((m) => m[1] as string)
    if (names.length > 0) schema.params ??= paramsOf(names)
    route.schema = schema
  })
}

/**
 * A refusal answered before the request's body arrived whole (no admin token, a wrong one, the
 * failure throttle) closes the connection: the rest of the body is never read (docs/security.md).
 */
export function closeIfBodyUnread (req: FastifyRequest, reply: FastifyReply): void {
  if (bodyUnread(req.raw)) reply.header('connection', 'close')
}
