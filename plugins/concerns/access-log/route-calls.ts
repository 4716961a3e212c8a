// Access-log lines for the plain HTTP APIs beside the model pipeline (the console and the admin
// API): one line per call, written when the answer is sent, so sign-ups, sign-ins,
// resets and key changes leave an audit trail. Identifiers and numbers only: the route as
// declared (`/console/v1/keys/:id`, never the URL with its query), the client address, the
// account when known and the email as a short SHA-256 (never the address itself); never a
// body, header, password, code, cookie or CSRF token.
import type { FastifyBaseLogger, FastifyInstance } from 'fastify'
import { createHash } from 'node:crypto'
import type { AccessLogConfig } from '../../foundation/config/types.js'

/** What a handler learns about the caller, for its access-log line. */
export interface CallAudit {
  accountId: string | null
  /** The normalised email the call is about (logged hashed). */
  email: string | null
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Filled by route handlers of an API that logs its calls (logRouteCalls). */
    callAudit: CallAudit
  }
}

/** The email as the log shows it: the first 16 hex digits of its SHA-256 (`printf %s <email> | sha256sum`). */
export function emailLogHash (email: string): string {
  return createHash('sha256').update(email, 'utf8').digest('hex').slice(0, 16)
}

export interface RouteCallsOptions {
  log: FastifyBaseLogger
  /** observability.access_log (absent: on, at info). */
  config: AccessLogConfig | undefined
  /** The line's `msg`, to filter on. */
  message: string
  /** Add the matched route's path parameters (`ids`: what the call acted on; they passed the route's params schema). */
  ids?: boolean
}

/** Registers the hooks on `app` (and the routes registered inside it). */
export function logRouteCalls (app: FastifyInstance, opts: RouteCallsOptions): void {
  app.decorateRequest('callAudit', null as unknown as CallAudit)
  app.addHook('onRequest', async (req) => { req.callAudit = { accountId: null, email: null } })
  const config = opts.config ?? { enabled: true, level: 'info' }
  if (!config.enabled) return
  const write = opts.log[config.level].bind(opts.log)
  app.addHook('onResponse', async (req, reply) => {
    const code = reply.getHeader('x-gateway-error-code')
    const { accountId, email } = req.callAudit
    write({
      requestId: req.id,
      method: req.method,
      // Declared routes only: an unknown path is not echoed (it is client text).
      route: req.routeOptions.url ?? null,
      ...(opts.ids === true ? { ids: req.routeOptions.url === undefined ? null : req.params } : {}),
      status: reply.statusCode,
      code: typeof code === 'string' ? code : null,
      totalMs: Math.round(reply.elapsedTime * 1000) / 1000,
      address: req.ip,
      accountId,
      emailHash: email === null ? null : emailLogHash(email)
    }, opts.message)
  })
}
