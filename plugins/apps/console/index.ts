// The account console: an API under /console/v1 and a web page at /console for account
// holders (sign-up, verification, sign-in, sessions, keys, wallet, request log, usage, models).
// It is no phase of the model-request pipeline: the gateway registers it beside the pipeline's
// routes (config `console.enabled`), on the same store, so it costs model requests nothing.
import type { FastifyInstance } from 'fastify'
import { logRouteCalls } from '../../concerns/access-log/route-calls.js'
import { adminContext, type AdminContext } from '../../concerns/accounts/service.js'
import { ADMIN_SCHEMAS } from '../admin/schemas.js'
import type { GatewayConfig } from '../../foundation/config/types.js'
import { gatewayError, type Catalogue } from '../../foundation/errors/index.js'
import type { Clock, Store } from '../../foundation/store/index.js'
import { consoleApi } from './api.js'
import { openConsoleStore, type ConsoleStore } from './console-store.js'
import { consolePage } from './page.js'

export { openConsoleStore, type ConsoleStore, type ConsoleSession, type ConsoleUser, type OutboxMessage, type PendingSignup } from './console-store.js'
export { CONSOLE_CSP } from './page.js'
export { solveChallenge, leadingZeroBits, hashPassword, verifyPassword } from './secrets.js'
export { normaliseEmail, mailbox, DisposableDomains } from './email.js'
export { SESSION_COOKIE, CSRF_HEADER } from './session.js'

export const CONSOLE_PREFIX = '/console'
/** The `msg` of the console's access-log lines (one per page or API call). */
export const CONSOLE_ACCESS_LOG_MESSAGE = 'console request'

export interface ConsoleOptions {
  config: GatewayConfig
  /** The gateway plan's error catalogue. */
  catalogue: Catalogue
  store: Store
  clock: Clock
}

/** Register with `prefix: CONSOLE_PREFIX`: the page at /console, the API at /console/v1. */
export async function consolePlugin (app: FastifyInstance, opts: ConsoleOptions): Promise<void> {
  const catalogue = opts.catalogue
  const consoleStore = openConsoleStore(opts.store.backend)
  logRouteCalls(app, { log: app.log, config: opts.config.observability?.access_log, message: CONSOLE_ACCESS_LOG_MESSAGE })
  await app.register(consolePage)
  await app.register(consoleApi, {
    prefix: '/v1',
    store: opts.store,
    consoleStore,
    config: opts.config.console,
    admin: adminContext(opts.store, opts.config, opts.clock),
    catalogue
  })
}

const outboxStores = new WeakMap<Store, ConsoleStore>()

/**
 * `GET /admin/v1/console/outbox?email=&limit=`: the mail the console would have sent (the
 * verification codes), newest first, for operators without SMTP. Passed to adminRoutes as
 * `extraRoutes`, so it has the admin token check and envelope.
 */
export function consoleAdminRoutes (app: FastifyInstance, ctx: AdminContext): void {
  app.get('/console/outbox', { schema: ADMIN_SCHEMAS.consoleOutbox }, async (req) => {
    const q = (req.query ?? {}) as Record<string, unknown>
    const limit = q.limit === undefined ? 50 : Number(q.limit)
    if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw gatewayError('REQUEST_INVALID', { param: 'limit', detail: 'limit must be an integer from 1 to 1000.' })
    const email = q.email
    if (email !== undefined && typeof email !== 'string') throw gatewayError('REQUEST_INVALID', { param: 'email', detail: 'email must be a string.' })
    let store = outboxStores.get(ctx.store)
    if (store === undefined) {
      store = openConsoleStore(ctx.store.backend)
      outboxStores.set(ctx.store, store)
    }
    const rows = await store.listOutbox({ limit, ...(email === undefined ? {} : { to: email.trim().toLowerCase() }) })
    return { data: rows.map((m) => ({ id: m.id, to: m.to, subject: m.subject, body: m.body, created_at: m.createdAt.toISOString() })) }
  })
}
