// The console's throttles: fixed windows of counted events (sign-ups, mails, code guesses,
// failed sign-ins, used challenges) kept in the store's console_throttle table, so every
// instance on one database counts together (PostgreSQL) and a restart forgets nothing. A window
// opens at the first event it counts; an event is counted before the work it guards, so
// concurrent requests cannot all slip under a budget. Keys are HMACs of the budget and subject.
import { isIPv4, isIPv6 } from 'node:net'
import type { ConsoleConfig } from '../../foundation/config/types.js'
import { gatewayError } from '../../foundation/errors/index.js'
import type { ConsoleStore } from './console-store.js'

export const HOUR_MS = 3_600_000
/** How long a proof-of-work challenge may be solved and sent. */
export const CHALLENGE_TTL_MS = 5 * 60_000
/** Ended windows are deleted at most this often (by the instance that counts next). */
const SWEEP_INTERVAL_MS = 60_000

export interface Budget {
  /** Part of the counter key: two budgets never share a counter. */
  readonly name: string
  /** Events a window admits; the next one is over. */
  readonly limit: number
  readonly windowMs: number
}

export interface Taken {
  /** Events in the window, this one included. */
  count: number
  /** This event is past the budget. */
  over: boolean
  /** Seconds until the window ends (at least 1). */
  retryAfterSeconds: number
}

/** Every budget of the console, from its config (docs/console.md lists them with defaults). */
export function consoleBudgets (c: ConsoleConfig) {
  return {
    signupsPerAddress: { name: 'signup-address', limit: c.signups_per_address_per_hour, windowMs: HOUR_MS },
    mailsPerEmail: { name: 'mail-email', limit: c.mails_per_email_per_hour, windowMs: HOUR_MS },
    mailRequestsPerAddress: { name: 'mail-address', limit: c.mail_requests_per_address_per_hour, windowMs: HOUR_MS },
    guessesPerEmail: { name: 'guess-email', limit: c.code_guesses_per_email_per_hour, windowMs: HOUR_MS },
    signinFailuresPerAddress: { name: 'signin-address', limit: c.signin_max_failures, windowMs: c.signin_failure_window_ms },
    signinFailuresPerEmail: { name: 'signin-email', limit: c.signin_max_failures_per_email, windowMs: c.signin_failure_window_ms },
    challengeUses: { name: 'challenge', limit: 1, windowMs: CHALLENGE_TTL_MS }
  } satisfies Record<string, Budget>
}
export type ConsoleBudgets = ReturnType<typeof consoleBudgets>

export class ConsoleThrottle {
  private lastSweep = 0

  constructor (
    private readonly store: ConsoleStore,
    /** HMAC-SHA256 under the server secret. */
    private readonly mac: (text: string) => string,
    private readonly now: () => Date,
    private readonly onSweepError: (err: unknown) => void
  ) {}

  private key (budget: Budget, subject: string): string {
    return this.mac(`console-throttle:${budget.name}:${subject}`)
  }

  /** Counts one event of `subject` against `budget`. */
  async take (budget: Budget, subject: string): Promise<Taken> {
    const now = this.now()
    this.sweep(now)
    const { count, windowEndsAt } = await this.store.count(this.key(budget, subject), budget.windowMs, now)
    return { count, over: count > budget.limit, retryAfterSeconds: Math.max(1, Math.ceil((windowEndsAt.getTime() - now.getTime()) / 1000)) }
  }

  /** Takes back an event counted by `take` that turned out not to be one (nothing was tried). */
  async giveBack (budget: Budget, subject: string): Promise<void> {
    await this.store.uncount(this.key(budget, subject), this.now())
  }

  async clear (budget: Budget, subject: string): Promise<void> {
    await this.store.clearCount(this.key(budget, subject))
  }

  private sweep (now: Date): void {
    if (now.getTime() - this.lastSweep < SWEEP_INTERVAL_MS) return
    this.lastSweep = now.getTime()
    this.store.sweepCounts(now).catch(this.onSweepError)
  }
}

/** LIMIT_RATE_EXCEEDED with the window's remaining seconds in Retry-After. */
export function tooMany (taken: Taken, detail: string): Error {
  return gatewayError('LIMIT_RATE_EXCEEDED', { retryAfterSeconds: taken.retryAfterSeconds, detail })
}

/**
 * The subject a client address is throttled as: an IPv4 address itself (also when IPv4-mapped),
 * an IPv6 address by its /64 prefix (one subscriber usually holds a whole /64).
 */
export function throttleAddress (ip: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip)
  if (mapped?.[1] !== undefined) return mapped[1]
  if (isIPv4(ip) || !isIPv6(ip)) return ip
  const [head = '', tail = ''] = ip.toLowerCase().split('::')
  const left = head === '' ? [] : head.split(':')
  const right = tail === '' ? [] : tail.split(':')
  const groups = ip.includes('::') ? [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right] : left
  return `${groups.slice(0, 4).map((g) => g.replace(/^0+(?=.)/, '')).join(':')}::/64`
}
