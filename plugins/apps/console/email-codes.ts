// Email codes, for a sign-up's verification and for a password reset: six random digits, mailed
// (SMTP) or put in the outbox, stored only as an HMAC and compared in constant time. A code is
// void after `verification_max_attempts` wrong guesses or `verification_code_ttl_ms`; a new one
// replaces the pending one. Every guess at any code of a mailbox counts against
// `code_guesses_per_email_per_hour` before it is compared, whether the address exists or not.
import { randomUUID } from 'node:crypto'
import type { ConsoleConfig } from '../../foundation/config/types.js'
import { gatewayError } from '../../foundation/errors/index.js'
import type { CodePurpose, ConsoleStore } from './console-store.js'
import { mailbox } from './email.js'
import type { ConsoleMail, Mailer } from './mailer.js'
import { newVerificationCode, safeEqualText } from './secrets.js'
import { tooMany, type ConsoleBudgets, type ConsoleThrottle } from './throttle.js'

let outboxSeq = 0
/** Sortable within a process even when the clock stands still: time, a counter, then randomness. */
function outboxId (now: Date): string {
  outboxSeq = (outboxSeq + 1) % 1_679_616
  return `msg_${now.getTime().toString(36).padStart(9, '0')}${outboxSeq.toString(36).padStart(4, '0')}${randomUUID().slice(0, 8)}`
}

export interface NewCode {
  /** The plaintext: mailed, never stored. */
  code: string
  hash: string
  expiresAt: Date
}

export interface EmailCodesDeps {
  store: ConsoleStore
  config: ConsoleConfig
  mac: (text: string) => string
  now: () => Date
  throttle: ConsoleThrottle
  budgets: ConsoleBudgets
  mailer: Mailer
}

const SUBJECTS: Record<CodePurpose, string> = {
  verify: 'Your model gateway verification code',
  reset: 'Your model gateway password reset code'
}

export class EmailCodes {
  constructor (private readonly deps: EmailCodesDeps) {}

  private digest (purpose: CodePurpose, email: string, code: string): string {
    return this.deps.mac(`console-code:${purpose}:${email}:${code}`)
  }

  /** A fresh code for `email`, not stored yet (a sign-up stores it with its row). */
  create (purpose: CodePurpose, email: string): NewCode {
    const code = newVerificationCode()
    return { code, hash: this.digest(purpose, email, code), expiresAt: new Date(this.deps.now().getTime() + this.deps.config.verification_code_ttl_ms) }
  }

  /** Stores a fresh code (replacing the pending one) and mails it. */
  async issue (purpose: CodePurpose, email: string, waitForSmtp: boolean): Promise<void> {
    const fresh = this.create(purpose, email)
    await this.deps.store.setCode(purpose, email, fresh.hash, fresh.expiresAt)
    await this.mail(purpose, email, fresh.code, waitForSmtp)
  }

  /**
   * Through SMTP when configured (a failed send is logged by the mailer; the user asks again),
   * else into the outbox. Without `waitForSmtp` the SMTP hand-off runs on after the answer, so
   * its time does not tell a caller whether a mail went out.
   */
  async mail (purpose: CodePurpose, email: string, code: string, waitForSmtp: boolean): Promise<void> {
    const minutes = Math.round(this.deps.config.verification_code_ttl_ms / 60_000)
    const body = purpose === 'verify'
      ? `Your verification code is ${code}. It expires in ${minutes} minutes. If you did not sign up, ignore this mail.`
      : `Your password reset code is ${code}. It expires in ${minutes} minutes. If you did not ask for it, ignore this mail: your password stays as it is.`
    const mail: ConsoleMail = { to: email, subject: SUBJECTS[purpose], body }
    const sent = this.deps.mailer.send(mail).catch(() => true)
    if (!waitForSmtp && this.deps.mailer.smtp) return
    if (await sent) return
    const now = this.deps.now()
    await this.deps.store.addOutbox({ id: outboxId(now), ...mail, createdAt: now })
  }

  /**
   * Spends one guess of the mailbox's budget on `code`, then checks it: resolves on a match
   * (the code is used up), else AUTH_VERIFICATION_CODE_INVALID — one answer for a wrong, expired
   * or used-up code and for an address with no code — or LIMIT_RATE_EXCEEDED past the budget.
   */
  async check (purpose: CodePurpose, email: string | null, code: unknown): Promise<void> {
    if (email === null || typeof code !== 'string' || !/^\d{6}$/.test(code)) throw invalidCode()
    const taken = await this.deps.throttle.take(this.deps.budgets.guessesPerEmail, mailbox(email))
    if (taken.over) throw tooMany(taken, 'Too many codes were tried for this address; wait, then ask for a new code.')
    const digest = this.digest(purpose, email, code)
    const result = await this.deps.store.checkCode(purpose, email, (stored) => safeEqualText(stored, digest), this.deps.now(), this.deps.config.verification_max_attempts)
    if (result !== 'ok') throw invalidCode()
  }
}

export function invalidCode (): Error {
  return gatewayError('AUTH_VERIFICATION_CODE_INVALID', {
    param: 'code',
    detail: 'The code is wrong, expired or used up (a code dies after a few wrong tries); ask for a new one.'
  })
}
