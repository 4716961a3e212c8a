// Sign-up, email verification and password reset. A sign-up is pending (no user, no account)
// until its code is entered; a pending sign-up older than the code's lifetime no longer holds
// its address: a new sign-up restarts it with a new password and code. Every route counts
// against its budgets before it checks, hashes or mails anything, and answers the same
// whether the address is registered, pending or unknown, except sign-up itself (409).
import { randomUUID } from 'node:crypto'
import type { FastifyInstance } from 'fastify'
import * as admin from '../../concerns/accounts/service.js'
import { gatewayError } from '../../foundation/errors/index.js'
import { clientSubject, objectBody, passwordField, type ConsoleDeps } from './context.js'
import { invalidCode } from './email-codes.js'
import { DisposableDomains, mailbox, normaliseEmail } from './email.js'
import { tooMany, type Budget } from './throttle.js'

export function signupRoutes (app: FastifyInstance, deps: ConsoleDeps): void {
  const { consoleStore, config, throttle, budgets, codes, hasher } = deps
  const now = deps.admin.now
  const disposable = new DisposableDomains(config.blocked_email_domains)

  const spend = async (budget: Budget, subject: string, detail: string): Promise<void> => {
    const taken = await throttle.take(budget, subject)
    if (taken.over) throw tooMany(taken, detail)
  }
  /** A resend or reset request: one of the client address's requests and one of the mailbox's mails. */
  const spendMailRequest = async (address: string, email: string): Promise<void> => {
    await spend(budgets.mailRequestsPerAddress, address, 'Too many code requests from this address; wait before asking again.')
    await spend(budgets.mailsPerEmail, mailbox(email), 'Too many codes were sent to this email address; wait before asking again.')
  }
  const emailOf = (body: Record<string, unknown>): string => {
    const email = normaliseEmail(body.email)
    if (email === null) throw gatewayError('AUTH_EMAIL_INVALID', { param: 'email' })
    return email
  }

  app.post('/signup', async (req, reply) => {
    if (config.signup !== 'open') throw gatewayError('AUTH_SIGNUP_NOT_ALLOWED')
    // Counted first, whatever the body: a flood of bad bodies spends the address's budget too.
    await spend(budgets.signupsPerAddress, clientSubject(req), 'Too many sign-ups from this address; wait before trying again.')
    const body = objectBody(req.body)
    const email = emailOf(body)
    req.callAudit.email = email
    if (disposable.has(email)) throw gatewayError('AUTH_DISPOSABLE_EMAIL', { param: 'email' })
    const password = passwordField(body, config, true)
    await spend(budgets.mailsPerEmail, mailbox(email), 'Too many codes were sent to this email address; wait before trying again.')
    const at = now()
    const restartBefore = new Date(at.getTime() - config.verification_code_ttl_ms)
    const taken = async (): Promise<boolean> => {
      if ((await consoleStore.userByEmail(email)) !== null) return true
      const pending = await consoleStore.pendingSignup(email)
      return pending !== null && pending.startedAt.getTime() >= restartBefore.getTime()
    }
    // Looked at before the hash (no hash for an address that is taken), decided atomically after it.
    const alreadyTaken = (): Error => gatewayError('AUTH_EMAIL_ALREADY_REGISTERED', { param: 'email', detail: 'The address is registered, or waits for the code sent to it.' })
    if (await taken()) throw alreadyTaken()
    const passwordHash = await hasher.hash(password)
    const code = codes.create('verify', email)
    const started = await consoleStore.startSignup({ email, passwordHash, codeHash: code.hash, codeExpiresAt: code.expiresAt, now: at, restartBefore })
    if (started !== 'started') throw alreadyTaken()
    await codes.mail('verify', email, code.code, true)
    return reply.code(201).send({ email, status: 'verification_required' })
  })

  // A verified address, an unknown one and a wrong code get the same answer.
  app.post('/verify', async (req) => {
    const body = objectBody(req.body)
    const email = normaliseEmail(body.email)
    req.callAudit.email = email
    await codes.check('verify', email, body.code)
    const pending = email === null ? null : await consoleStore.pendingSignup(email)
    if (email === null || pending === null) throw invalidCode()
    const accountId = pending.accountId ?? (await admin.createAccount(deps.admin, { name: email.slice(0, 100) })).id
    const userId = `usr_${randomUUID().replace(/-/g, '')}`
    const done = await consoleStore.completeSignup({ email, userId, accountId, at: now() })
    if (done !== 'ok') {
      // Lost a race (another verification of the address): the account just made stays unused and suspended.
      if (pending.accountId === null) await deps.store.accounts.update(accountId, { status: 'suspended' })
      throw invalidCode()
    }
    req.callAudit.accountId = accountId
    return { email, verified: true, account_id: accountId }
  })

  // Always the same answer (or the same 429), so it tells nobody whether an address is pending.
  app.post('/verify/resend', async (req, reply) => {
    const email = emailOf(objectBody(req.body))
    req.callAudit.email = email
    await spendMailRequest(clientSubject(req), email)
    if ((await consoleStore.pendingSignup(email)) !== null) await codes.issue('verify', email, false)
    return reply.code(202).send({ email, status: 'sent_if_pending' })
  })

  // Always the same answer (or the same 429), so it tells nobody whether an address is registered.
  app.post('/password/reset', async (req, reply) => {
    const email = emailOf(objectBody(req.body))
    req.callAudit.email = email
    await spendMailRequest(clientSubject(req), email)
    const user = await consoleStore.userByEmail(email)
    if (user !== null && user.emailVerifiedAt !== null) await codes.issue('reset', email, false)
    return reply.code(202).send({ email, status: 'sent_if_registered' })
  })

  app.post('/password/reset/confirm', async (req) => {
    const body = objectBody(req.body)
    const email = normaliseEmail(body.email)
    req.callAudit.email = email
    // The new password is checked before a guess is spent on the code.
    const password = passwordField(body, config, true)
    await codes.check('reset', email, body.code)
    const user = email === null ? null : await consoleStore.userByEmail(email)
    if (user === null) throw invalidCode()
    await consoleStore.setPassword(user.id, await hasher.hash(password))
    // Whoever held a session (or guessed the old password) is out; the owner signs in afresh.
    const ended = await consoleStore.deleteSessionsOf(user.id)
    await throttle.clear(budgets.signinFailuresPerEmail, mailbox(user.email))
    req.callAudit.accountId = user.accountId
    return { email: user.email, status: 'password_reset', sessions_ended: ended }
  })
}
