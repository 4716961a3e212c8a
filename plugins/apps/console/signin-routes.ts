// Sign-in. Two failure counters, both taken before the password is hashed: one per client
// address (whatever the emails: a password sprayed across many emails meets the proof of work,
// then 429) and one per email (whatever the addresses: a botnet guessing one account meets the
// same). Past `human_check_after_failures` on either, a solved proof of work is required; past
// the address's or the email's maximum, 429 until that window ends. An attempt that checked no
// password (the challenge was asked for, or the hasher was busy) is given back; a success gives
// back the address's count and clears the email's.
import { randomUUID } from 'node:crypto'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { gatewayError } from '../../foundation/errors/index.js'
import { clientSubject, objectBody, passwordField, type ConsoleDeps } from './context.js'
import type { ConsoleSession } from './console-store.js'
import { mailbox, normaliseEmail } from './email.js'
import { hashPassword, newToken, ProofOfWork } from './secrets.js'
import { MAX_SESSIONS_PER_USER, setSessionCookie, tokenDigest } from './session.js'
import { CHALLENGE_TTL_MS, tooMany } from './throttle.js'

export function signinRoutes (app: FastifyInstance, deps: ConsoleDeps): void {
  const { consoleStore, config, throttle, budgets, hasher, sessions } = deps
  const now = deps.admin.now
  const pow = new ProofOfWork(deps.mac, CHALLENGE_TTL_MS, async (challenge) => !(await throttle.take(budgets.challengeUses, challenge)).over)
  // Unknown emails are checked against this hash, so they cost what a known one costs. Made at
  // the first sign-in, not at start (every gateway start would pay one scrypt otherwise).
  let dummyHash: Promise<string> | undefined

  app.get('/challenge', async () => pow.issue(config.human_check_difficulty, now().getTime()))

  /**
   * Throws AUTH_HUMAN_CHECK_REQUIRED / _FAILED unless the body carries a fresh solved challenge.
   * Neither checked a password: a missing check counts for nothing, a failed one only against
   * the client address that sent it, never against the email (forged solutions cost nothing, and
   * counted for the email they locked its owner out without a single proof of work).
   */
  const humanCheck = async (body: Record<string, unknown>, giveBack: { both: () => Promise<void>, email: () => Promise<void> }): Promise<void> => {
    const check = body.human_check
    if (typeof check !== 'object' || check === null) {
      await giveBack.both()
      throw gatewayError('AUTH_HUMAN_CHECK_REQUIRED', { param: 'human_check', detail: 'GET /console/v1/challenge, solve it and send human_check: { challenge, solution }.' })
    }
    const { challenge, solution } = check as Record<string, unknown>
    if (typeof challenge !== 'string' || typeof solution !== 'string' ||
        await pow.check(challenge, solution, config.human_check_difficulty, now().getTime()) !== 'ok') {
      await giveBack.email()
      throw gatewayError('AUTH_HUMAN_CHECK_FAILED', { param: 'human_check' })
    }
  }

  const startSession = async (req: FastifyRequest, userId: string, accountId: string): Promise<{ token: string, id: string }> => {
    const token = newToken()
    const at = now()
    const session: ConsoleSession = {
      id: `ses_${randomUUID().replace(/-/g, '')}`,
      userId,
      accountId,
      userAgent: String(req.headers['user-agent'] ?? '').slice(0, 200),
      address: req.ip,
      createdAt: at,
      lastSeenAt: at,
      expiresAt: new Date(at.getTime() + config.session_ttl_ms)
    }
    await consoleStore.createSession(session, tokenDigest(token), MAX_SESSIONS_PER_USER)
    return { token, id: session.id }
  }

  app.post('/signin', async (req, reply) => {
    const body = objectBody(req.body)
    const password = passwordField(body, config, false)
    const email = normaliseEmail(body.email) ?? ''
    req.callAudit.email = email === '' ? null : email
    const address = clientSubject(req)
    // A malformed email still counts, under its raw (bounded) text.
    const emailSubject = email === '' ? `raw:${String(body.email ?? '').slice(0, 320).toLowerCase()}` : mailbox(email)
    const byAddress = await throttle.take(budgets.signinFailuresPerAddress, address)
    const byEmail = await throttle.take(budgets.signinFailuresPerEmail, emailSubject)
    const giveBackEmail = async (): Promise<void> => { await throttle.giveBack(budgets.signinFailuresPerEmail, emailSubject) }
    const giveBack = async (): Promise<void> => {
      await throttle.giveBack(budgets.signinFailuresPerAddress, address)
      await giveBackEmail()
    }
    // A refusal over a budget checked nothing: taken back, so attempts still in flight (counted,
    // then asked for the proof of work and taken back) cannot leave a burst counted as failures.
    if (byAddress.over || byEmail.over) {
      await giveBack()
      if (byAddress.over) throw tooMany(byAddress, 'Too many failed sign-ins from this address; wait before trying again.')
      throw tooMany(byEmail, 'Too many failed sign-ins for this email; wait before trying again.')
    }
    // The counts include this attempt: earlier failures are one less.
    if (Math.max(byAddress.count, byEmail.count) - 1 >= config.human_check_after_failures) await humanCheck(body, { both: giveBack, email: giveBackEmail })

    // Once per process and outside the hasher's queue, so a busy moment cannot spoil it.
    // At the configured cost: an unknown email costs what a user's password does.
    dummyHash ??= hashPassword(newToken(), hasher.cost)
    const user = email === '' ? null : await consoleStore.userByEmail(email)
    const pending = user === null && email !== '' ? await consoleStore.pendingSignup(email) : null
    // One scrypt whether the email is a user, a pending sign-up or unknown.
    let matches: boolean
    try {
      matches = await hasher.verify(password, user?.passwordHash ?? pending?.passwordHash ?? await dummyHash)
    } catch (err) {
      await giveBack()
      throw err
    }
    if (!matches) throw gatewayError('AUTH_CREDENTIALS_INVALID')
    // Answered only after the right password, so it tells nothing to someone without it.
    if (user === null || user.emailVerifiedAt === null) {
      await giveBack()
      throw gatewayError('AUTH_EMAIL_NOT_VERIFIED', { detail: 'Enter the code sent to this address first.' })
    }
    req.callAudit.accountId = user.accountId
    const account = await deps.store.accounts.get(user.accountId)
    if (account === null || account.status !== 'active') {
      await giveBack()
      throw gatewayError('AUTH_ACCOUNT_SUSPENDED')
    }
    await throttle.giveBack(budgets.signinFailuresPerAddress, address)
    await throttle.clear(budgets.signinFailuresPerEmail, emailSubject)
    const { token, id } = await startSession(req, user.id, user.accountId)
    setSessionCookie(req, reply, token, config.session_ttl_ms)
    return { email: user.email, account_id: user.accountId, session_id: id, csrf_token: sessions.csrfToken(token) }
  })
}
