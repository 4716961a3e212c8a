// The console API under /console/v1: JSON in and out, every error a catalogue code in the
// chat-completions envelope. Sign-up, verification and sign-in are open; everything else needs
// a session, and every state change its CSRF token. Key operations reuse the admin service (one
// set of guardrails), scoped to the signed-in account: another account's key is
// AUTH_API_KEY_NOT_FOUND, another user's session AUTH_SESSION_NOT_FOUND.
import { randomUUID } from 'node:crypto'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import * as admin from '../admin/service.js'
import type { AdminContext } from '../admin/service.js'
import { listModels } from '../admin/models.js'
import { requestLogView } from '../admin/views.js'
import type { ConsoleConfig } from '../config/types.js'
import { createMailer } from './mailer.js'
import { classify, gatewayError, renderError, toOccurrence, type Catalogue } from '../errors/index.js'
import { formatMoney } from '../pricing/money.js'
import { InvalidCursorError, type Store } from '../store/index.js'
import type { ConsoleSession, ConsoleStore } from './console-store.js'
import { DisposableDomains, normaliseEmail } from './email.js'
import { hashPassword, newToken, newVerificationCode, ProofOfWork, verifyPassword } from './secrets.js'
import { clearSessionCookie, Sessions, setSessionCookie, tokenDigest } from './session.js'
import { SignInThrottle } from './throttle.js'
import { usageByDay } from './usage.js'

export const CONSOLE_API_BODY_LIMIT = 64 * 1024
const MAX_PASSWORD = 1024
const CHALLENGE_TTL_MS = 5 * 60_000

export interface ConsoleApiOptions {
  store: Store
  consoleStore: ConsoleStore
  config: ConsoleConfig
  admin: AdminContext
  catalogue: Catalogue
}

interface IdParams { id: string }

let outboxSeq = 0
/** Sortable within a process even when the clock stands still: time, a counter, then randomness. */
function outboxId (now: Date): string {
  outboxSeq = (outboxSeq + 1) % 1_679_616
  return `msg_${now.getTime().toString(36).padStart(9, '0')}${outboxSeq.toString(36).padStart(4, '0')}${randomUUID().slice(0, 8)}`
}

function invalid (param: string, detail: string): Error {
  return gatewayError('REQUEST_INVALID', { param, detail })
}

function objectBody (body: unknown): Record<string, unknown> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw invalid('body', 'The body must be a JSON object.')
  return body as Record<string, unknown>
}

function stringField (body: Record<string, unknown>, name: string, max: number): string {
  const v = body[name]
  if (typeof v !== 'string' || v.length === 0) throw invalid(name, `${name} is required (a string).`)
  if (v.length > max) throw invalid(name, `${name} must be at most ${max} characters.`)
  return v
}

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
  const disposable = new DisposableDomains(config.blocked_email_domains)
  const throttle = new SignInThrottle({
    humanCheckAfter: config.human_check_after_failures,
    maxFailures: config.signin_max_failures,
    windowMs: config.signin_failure_window_ms
  })
  const pow = new ProofOfWork(mac, CHALLENGE_TTL_MS)
  // Unknown emails are checked against this hash, so they cost what a known one costs. Made at
  // the first sign-in, not at start (every gateway start would pay one scrypt otherwise).
  let dummyHash: Promise<string> | undefined
  const codeDigest = (userId: string, code: string): string => mac(`console-code:${userId}:${code}`)

  const sendError = (req: FastifyRequest, reply: FastifyReply, err: unknown): FastifyReply => {
    if (classify(err).internal) req.log.error({ err }, 'console API: unexpected error')
    const rendered = renderError(toOccurrence(err, req.id, catalogue), 'chat', catalogue)
    return reply.code(rendered.status).headers(rendered.headers).send(rendered.body)
  }
  app.setErrorHandler((err, req, reply) => sendError(req, reply, err))
  app.setNotFoundHandler((req, reply) => sendError(req, reply, gatewayError('REQUEST_ROUTE_NOT_FOUND')))
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

  const mailer = createMailer(config.smtp_url, config.mail_from, app.log)
  app.addHook('onClose', async () => { mailer.close() })

  /** The code goes out by SMTP when configured (a failed send is logged; the user asks again), else to the outbox. */
  const sendCode = async (userId: string, email: string): Promise<void> => {
    const code = newVerificationCode()
    const now = ctx.now()
    await consoleStore.setCode(userId, codeDigest(userId, code), new Date(now.getTime() + config.verification_code_ttl_ms))
    const mail = {
      to: email,
      subject: 'Your model gateway verification code',
      body: `Your verification code is ${code}. It expires in ${Math.round(config.verification_code_ttl_ms / 60_000)} minutes.`
    }
    if (await mailer.send(mail).catch(() => true)) return
    await consoleStore.addOutbox({ id: outboxId(now), ...mail, createdAt: now })
  }

  /**
   * A key route's session (CSRF-checked when the route changes something), once its account owns
   * the key `:id`: another account's key is AUTH_API_KEY_NOT_FOUND, as a key that does not exist.
   */
  const keyOwner = async (req: FastifyRequest<{ Params: IdParams }>, change: boolean): Promise<ConsoleSession> => {
    const { session } = change ? await sessions.requireWithCsrf(req) : await sessions.require(req)
    const key = await store.keys.get(req.params.id)
    if (key === null || key.accountId !== session.accountId) throw gatewayError('AUTH_API_KEY_NOT_FOUND', { param: 'key_id' })
    return session
  }

  // ---- sign-up, verification, sign-in ---------------------------------------------------------

  app.post('/signup', async (req, reply) => {
    if (config.signup !== 'open') throw gatewayError('AUTH_SIGNUP_NOT_ALLOWED')
    const body = objectBody(req.body)
    const email = normaliseEmail(body.email)
    if (email === null) throw gatewayError('AUTH_EMAIL_INVALID', { param: 'email' })
    if (disposable.has(email)) throw gatewayError('AUTH_DISPOSABLE_EMAIL', { param: 'email' })
    const password = stringField(body, 'password', MAX_PASSWORD)
    if ([...password].length < config.password_min_length) throw invalid('password', `password must be at least ${config.password_min_length} characters.`)
    if ((await consoleStore.userByEmail(email)) !== null) throw gatewayError('AUTH_EMAIL_ALREADY_REGISTERED', { param: 'email' })
    const passwordHash = await hashPassword(password)
    const account = await admin.createAccount(ctx, { name: email.slice(0, 100) })
    const userId = `usr_${randomUUID().replace(/-/g, '')}`
    const created = await consoleStore.createUser({ id: userId, accountId: account.id, email, passwordHash, createdAt: ctx.now() })
    if (created === 'email_taken') {
      // A concurrent sign-up with the same email won: the account just made stays unused and suspended.
      await store.accounts.update(account.id, { status: 'suspended' })
      throw gatewayError('AUTH_EMAIL_ALREADY_REGISTERED', { param: 'email' })
    }
    await sendCode(userId, email)
    return reply.code(201).send({ email, account_id: account.id, status: 'verification_required' })
  })

  app.post('/verify', async (req) => {
    const body = objectBody(req.body)
    const email = normaliseEmail(body.email)
    const code = body.code
    if (typeof code !== 'string' || !/^\d{6}$/.test(code) || email === null) throw gatewayError('AUTH_VERIFICATION_CODE_INVALID', { param: 'code' })
    const user = await consoleStore.userByEmail(email)
    if (user === null) throw gatewayError('AUTH_VERIFICATION_CODE_INVALID', { param: 'code' })
    if (user.emailVerifiedAt !== null) return { email, verified: true }
    const result = await consoleStore.checkCode(user.id, codeDigest(user.id, code), ctx.now(), config.verification_max_attempts)
    if (result !== 'ok') {
      const detail = result === 'invalid' ? undefined : 'The code expired or was used up; ask for a new one.'
      throw gatewayError('AUTH_VERIFICATION_CODE_INVALID', { param: 'code', ...(detail === undefined ? {} : { detail }) })
    }
    await consoleStore.markVerified(user.id, ctx.now())
    return { email, verified: true }
  })

  // Always the same answer, so it tells nobody whether an address is registered.
  app.post('/verify/resend', async (req, reply) => {
    const body = objectBody(req.body)
    const email = normaliseEmail(body.email)
    if (email === null) throw gatewayError('AUTH_EMAIL_INVALID', { param: 'email' })
    const user = await consoleStore.userByEmail(email)
    if (user !== null && user.emailVerifiedAt === null) await sendCode(user.id, email)
    return reply.code(202).send({ email, status: 'sent_if_pending' })
  })

  app.get('/challenge', async () => pow.issue(config.human_check_difficulty, ctx.now().getTime()))

  app.post('/signin', async (req, reply) => {
    const body = objectBody(req.body)
    const password = stringField(body, 'password', MAX_PASSWORD)
    const email = normaliseEmail(body.email) ?? ''
    const nowMs = ctx.now().getTime()
    const pair = `${req.ip}\n${email}`
    const wait = throttle.retryAfterSeconds(pair, nowMs)
    if (wait > 0) throw gatewayError('LIMIT_RATE_EXCEEDED', { retryAfterSeconds: wait, detail: 'Too many failed sign-ins for this address and email.' })
    if (throttle.needsHumanCheck(pair, nowMs)) {
      const check = body.human_check
      if (typeof check !== 'object' || check === null) {
        throw gatewayError('AUTH_HUMAN_CHECK_REQUIRED', { param: 'human_check', detail: 'GET /console/v1/challenge, solve it and send human_check: { challenge, solution }.' })
      }
      const { challenge, solution } = check as Record<string, unknown>
      if (typeof challenge !== 'string' || typeof solution !== 'string' ||
          pow.check(challenge, solution, config.human_check_difficulty, nowMs) !== 'ok') {
        throttle.fail(pair, nowMs)
        throw gatewayError('AUTH_HUMAN_CHECK_FAILED', { param: 'human_check' })
      }
    }
    dummyHash ??= hashPassword(newToken())
    const user = email === '' ? null : await consoleStore.userByEmail(email)
    // The same scrypt work whether or not the email exists.
    const matches = await verifyPassword(password, user?.passwordHash ?? await dummyHash)
    if (user === null || !matches) {
      throttle.fail(pair, nowMs)
      throw gatewayError('AUTH_CREDENTIALS_INVALID')
    }
    if (user.emailVerifiedAt === null) throw gatewayError('AUTH_EMAIL_NOT_VERIFIED', { detail: 'Enter the code sent to this address first.' })
    const account = await store.accounts.get(user.accountId)
    if (account === null || account.status !== 'active') throw gatewayError('AUTH_ACCOUNT_SUSPENDED')
    throttle.succeed(pair)
    const token = newToken()
    const now = ctx.now()
    const session: ConsoleSession = {
      id: `ses_${randomUUID().replace(/-/g, '')}`,
      userId: user.id,
      accountId: user.accountId,
      userAgent: String(req.headers['user-agent'] ?? '').slice(0, 200),
      address: req.ip,
      createdAt: now,
      lastSeenAt: now,
      expiresAt: new Date(now.getTime() + config.session_ttl_ms)
    }
    await consoleStore.createSession(session, tokenDigest(token))
    setSessionCookie(req, reply, token, config.session_ttl_ms)
    return { email: user.email, account_id: user.accountId, session_id: session.id, csrf_token: sessions.csrfToken(token) }
  })

  // ---- the session ---------------------------------------------------------------------------

  app.get('/session', async (req) => {
    const { session, token } = await sessions.require(req)
    const account = await admin.getAccount(ctx, session.accountId)
    return {
      session: sessionView(session, session.id),
      account,
      csrf_token: sessions.csrfToken(token),
      reveal_allowed_until: new Date(session.createdAt.getTime() + config.reveal_window_ms).toISOString()
    }
  })

  app.post('/signout', async (req, reply) => {
    const { session } = await sessions.requireWithCsrf(req)
    await consoleStore.deleteSession(session.userId, session.id)
    clearSessionCookie(req, reply)
    return reply.code(204).send()
  })

  app.get('/sessions', async (req) => {
    const { session } = await sessions.require(req)
    const list = await consoleStore.listSessions(session.userId, ctx.now())
    return { data: list.map((s) => sessionView(s, session.id)) }
  })

  app.delete<{ Params: IdParams }>('/sessions/:id', async (req, reply) => {
    const { session } = await sessions.requireWithCsrf(req)
    if (req.params.id === session.id) throw gatewayError('AUTH_CURRENT_SESSION_REVOKE_FORBIDDEN', { param: 'session_id' })
    if (!(await consoleStore.deleteSession(session.userId, req.params.id))) throw gatewayError('AUTH_SESSION_NOT_FOUND', { param: 'session_id' })
    return reply.code(204).send()
  })

  // ---- keys ----------------------------------------------------------------------------------

  app.get('/keys', async (req) => {
    const { session } = await sessions.require(req)
    return await admin.listKeys(ctx, session.accountId)
  })

  app.post('/keys', async (req, reply) => {
    const { session } = await sessions.requireWithCsrf(req)
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
    if (ctx.now().getTime() - session.createdAt.getTime() > config.reveal_window_ms) {
      throw gatewayError('AUTH_FORBIDDEN', { detail: 'Revealing a key needs a recent sign-in: sign out and in again.' })
    }
    return await admin.revealKey(ctx, req.params.id)
  })

  // ---- money, requests, models ---------------------------------------------------------------

  app.get('/wallet', async (req) => {
    const { session } = await sessions.require(req)
    return await admin.getWallet(ctx, session.accountId)
  })

  app.get('/ledger', async (req) => {
    const { session } = await sessions.require(req)
    const q = objectBody(req.query ?? {})
    const limit = q.limit === undefined ? 50 : Number(q.limit)
    if (!Number.isInteger(limit) || limit < 1 || limit > 200) throw invalid('limit', 'limit must be an integer from 1 to 200.')
    const before = q.before
    if (before !== undefined && typeof before !== 'string') throw invalid('before', 'before must be an entry id.')
    const rows = await store.ledger.entries(session.accountId, { limit: limit + 1, ...(before === undefined ? {} : { before }) })
    const data = rows.slice(0, limit).map((e) => ({
      id: e.id,
      kind: e.kind,
      amount: formatMoney(e.amount),
      request_id: e.requestId,
      note: e.note,
      created_at: e.createdAt.toISOString()
    }))
    return { data, has_more: rows.length > limit, next_before: rows.length > limit ? (data[data.length - 1]?.id ?? null) : null }
  })

  app.get('/requests', async (req) => {
    const { session } = await sessions.require(req)
    const q = objectBody(req.query ?? {})
    const { model, outcome, key_id: keyId, ...rest } = q
    for (const [name, v] of [['model', model], ['outcome', outcome], ['key_id', keyId]] as const) {
      if (v !== undefined && typeof v !== 'string') throw invalid(name, `${name} must be a string.`)
    }
    // account_id is the session's, whatever the query says.
    const page = await admin.listRequests(ctx, { ...rest, account_id: session.accountId })
    const data = page.data.filter((r) =>
      (model === undefined || r.requested_model === model || r.answered_model === model) &&
      (outcome === undefined || r.outcome === outcome) &&
      (keyId === undefined || r.key_id === keyId))
    return { ...page, data }
  })

  app.get('/usage', async (req) => {
    const { session } = await sessions.require(req)
    const q = objectBody(req.query ?? {})
    const days = q.days === undefined ? 30 : Number(q.days)
    if (!Number.isInteger(days) || days < 1 || days > 90) throw invalid('days', 'days must be an integer from 1 to 90.')
    try {
      return await usageByDay(store.requestLog, session.accountId, days, ctx.now())
    } catch (err) {
      if (err instanceof InvalidCursorError) throw invalid('days', 'The request log could not be paged.')
      throw err
    }
  })

  app.get('/models', async (req) => {
    await sessions.require(req)
    // The published catalogue a key can call or will again: no draft, no retired model.
    // How the operator got there (configured and stored status, pricing checks) is not the account holder's.
    const data = (await listModels(ctx)).data
      .filter((m) => m.status === 'active' || m.status === 'paused')
      .map(({ configured_status: _c, stored_status: _s, status_updated_at: _u, pricing_complete: _p, pricing_problems: _q, ...shown }) => shown)
    return { data }
  })

  // The request log row of one request (the dashboard links here); another account's is not found.
  app.get<{ Params: IdParams }>('/requests/:id', async (req) => {
    const { session } = await sessions.require(req)
    const row = await store.requestLog.get(req.params.id)
    if (row === null || row.accountId !== session.accountId) throw gatewayError('REQUEST_ROUTE_NOT_FOUND', { param: 'request_id', detail: 'No such request.' })
    return requestLogView(row)
  })
}
