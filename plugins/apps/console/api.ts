// The console API under /console/v1: JSON in and out, every error a catalogue code in the
// chat-completions envelope. Sign-up, verification, password reset and sign-in are open
// (signup-routes.ts, signin-routes.ts); everything else needs a session, and every state change
// its CSRF token. Key operations reuse the admin service (one set of guardrails), scoped to the
// signed-in account: another account's key is AUTH_API_KEY_NOT_FOUND, another user's session
// AUTH_SESSION_NOT_FOUND. Showing or minting a key's plaintext needs a recent sign-in.
import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify'
import * as admin from '../../concerns/accounts/service.js'
import type { AdminContext } from '../../concerns/accounts/service.js'
import { adminValidatorCompiler, paramsOf, schemaRefusal } from '../admin/schemas.js'
import type { ConsoleConfig } from '../../foundation/config/types.js'
import { classify, gatewayError, renderError, toOccurrence, type Catalogue } from '../../foundation/errors/index.js'
import type { Store } from '../../foundation/store/index.js'
import type { ConsoleSession, ConsoleStore } from './console-store.js'
import { requireFreshSignIn, signedInAs, type ConsoleDeps } from './context.js'
import { EmailCodes } from './email-codes.js'
import { createMailer } from './mailer.js'
import { PasswordHasher } from './password-hasher.js'
import { readRoutes } from './read-routes.js'
import { clearSessionCookie, Sessions, type SignedIn } from './session.js'
import { signinRoutes } from './signin-routes.js'
import { signupRoutes } from './signup-routes.js'
import { ConsoleThrottle, consoleBudgets } from './throttle.js'

export const CONSOLE_API_BODY_LIMIT = 64 * 1024

export interface ConsoleApiOptions {
  store: Store
  consoleStore: ConsoleStore
  config: ConsoleConfig
  admin: AdminContext
  catalogue: Catalogue
}

interface IdParams { id: string }

/** A route's query when it declares none: nothing, so any parameter is named in a 400. */
const NO_QUERY = { type: 'object', properties: {}, additionalProperties: false }
const PATH_PARAM = /:([A-Za-z_][A-Za-z0-9_]*)/g

function sessionView (s: ConsoleSession, currentId: string): Record<string, unknown> {
  return {
    id: s.id,
    current: s.id === currentId,
    created_at: s.createdAt.toISOString(),
    last_seen_at: s.lastSeenAt.toISOString(),
    expires_at: s.expiresAt.toISOString(),
    user_agent: s.userAgent,
    address: s.address
  }
}

export async function consoleApi (app: FastifyInstance, opts: ConsoleApiOptions): Promise<void> {
  const { store, consoleStore, config, catalogue } = opts
  const ctx = opts.admin
  const mac = (text: string): string => store.hashKey(text)
  const sessions = new Sessions(consoleStore, mac, ctx.now, async (id) => (await store.accounts.get(id))?.status === 'active')
  const throttle = new ConsoleThrottle(consoleStore, mac, ctx.now, (err) => { app.log.warn({ err }, 'console throttle sweep failed') })
  const budgets = consoleBudgets(config)
  const mailer = createMailer(config.smtp_url, config.mail_from, app.log)
  app.addHook('onClose', async () => { mailer.close() })
  const deps: ConsoleDeps = {
    store,
    consoleStore,
    config,
    admin: ctx,
    mac,
    sessions,
    throttle,
    budgets,
    hasher: new PasswordHasher(config.password_hash_concurrency, config.password_hash_queue, { n: config.password_scrypt_n, r: config.password_scrypt_r, p: config.password_scrypt_p }),
    codes: new EmailCodes({ store: consoleStore, config, mac, now: ctx.now, throttle, budgets, mailer })
  }

  const sendError = (req: FastifyRequest, reply: FastifyReply, err: unknown): FastifyReply => {
    const refusal = schemaRefusal(err, 'REQUEST_INVALID') ?? err
    if (classify(refusal).internal) req.log.error({ err: refusal }, 'console API: unexpected error')
    const rendered = renderError(toOccurrence(refusal, req.id, catalogue), 'chat', catalogue)
    return reply.code(rendered.status).headers(rendered.headers).send(rendered.body)
  }
  app.setErrorHandler((err, req, reply) => sendError(req, reply, err))
  app.setNotFoundHandler((req, reply) => sendError(req, reply, gatewayError('REQUEST_ROUTE_NOT_FOUND')))
  // No coercion, no defaults, nothing removed: a value of the wrong shape is refused, not fixed.
  app.setValidatorCompiler(adminValidatorCompiler())
  // Path ids are checked as the admin API's are (no control character, at most 200 characters):
  // a NUL reached PostgreSQL's text parameter and answered 500.
  app.addHook('onRoute', (route: RouteOptions) => {
    const names = [...route.url.matchAll(PATH_PARAM)].map((m) => m[1] as string)
    route.schema = { querystring: NO_QUERY, ...(names.length > 0 ? { params: paramsOf(names) } : {}), ...(route.schema ?? {}) }
  })
  app.addHook('onRequest', async (req, reply) => {
    // Answers carry account data and keys: no cache keeps them.
    reply.header('cache-control', 'no-store').header('x-request-id', req.id)
  })
  app.removeAllContentTypeParsers()
  app.addContentTypeParser('application/json', { parseAs: 'string', bodyLimit: CONSOLE_API_BODY_LIMIT }, (_req, text, done) => {
    const body = String(text)
    if (body.trim() === '') { done(null, undefined); return }
    try {
      done(null, JSON.parse(body))
    } catch {
      done(gatewayError('REQUEST_INVALID', { param: 'body', detail: 'The body is not valid JSON.' }), undefined)
    }
  })

  signupRoutes(app, deps)
  signinRoutes(app, deps)

  const signedIn = (req: FastifyRequest, change: boolean): Promise<SignedIn> => signedInAs(sessions, req, change)

  /**
   * A key route's session, once its account owns the key `:id`: another account's key is
   * AUTH_API_KEY_NOT_FOUND, as a key that does not exist.
   */
  const keyOwner = async (req: FastifyRequest<{ Params: IdParams }>, change: boolean): Promise<ConsoleSession> => {
    const { session } = await signedIn(req, change)
    const key = await store.keys.get(req.params.id)
    if (key === null || key.accountId !== session.accountId) throw gatewayError('AUTH_API_KEY_NOT_FOUND', { param: 'key_id' })
    return session
  }

  // ---- the session ---------------------------------------------------------------------------

  app.get('/session', async (req) => {
    const { session, token } = await signedIn(req, false)
    const account = await admin.getAccount(ctx, session.accountId)
    return {
      session: sessionView(session, session.id),
      account,
      csrf_token: sessions.csrfToken(token),
      reveal_allowed_until: new Date(session.createdAt.getTime() + config.reveal_window_ms).toISOString()
    }
  })

  app.post('/signout', async (req, reply) => {
    const { session } = await signedIn(req, true)
    await consoleStore.deleteSession(session.userId, session.id)
    clearSessionCookie(req, reply)
    return reply.code(204).send()
  })

  app.get('/sessions', async (req) => {
    const { session } = await signedIn(req, false)
    const list = await consoleStore.listSessions(session.userId, ctx.now())
    return { data: list.map((s) => sessionView(s, session.id)) }
  })

  app.delete<{ Params: IdParams }>('/sessions/:id', async (req, reply) => {
    const { session } = await signedIn(req, true)
    if (req.params.id === session.id) throw gatewayError('AUTH_CURRENT_SESSION_REVOKE_FORBIDDEN', { param: 'session_id' })
    if (!(await consoleStore.deleteSession(session.userId, req.params.id))) throw gatewayError('AUTH_SESSION_NOT_FOUND', { param: 'session_id' })
    return reply.code(204).send()
  })

  // ---- keys ----------------------------------------------------------------------------------

  app.get('/keys', async (req) => {
    const { session } = await signedIn(req, false)
    return await admin.listKeys(ctx, session.accountId)
  })

  // The answer holds the new key's plaintext: the same fresh sign-in as a reveal.
  app.post('/keys', async (req, reply) => {
    const { session } = await signedIn(req, true)
    requireFreshSignIn(session, config, ctx.now(), 'Creating a key')
    return reply.code(201).send(await admin.createKey(ctx, session.accountId, req.body))
  })

  app.get<{ Params: IdParams }>('/keys/:id', async (req) => {
    await keyOwner(req, false)
    return await admin.getKey(ctx, req.params.id)
  })

  app.patch<{ Params: IdParams }>('/keys/:id', async (req) => {
    await keyOwner(req, true)
    return await admin.updateKey(ctx, req.params.id, req.body)
  })

  app.post<{ Params: IdParams }>('/keys/:id/revoke', async (req) => {
    await keyOwner(req, true)
    return await admin.revokeKey(ctx, req.params.id)
  })

  app.post<{ Params: IdParams }>('/keys/:id/reveal', async (req) => {
    const session = await keyOwner(req, true)
    requireFreshSignIn(session, config, ctx.now(), 'Revealing a key')
    return await admin.revealKey(ctx, req.params.id)
  })

  readRoutes(app, deps)
}
