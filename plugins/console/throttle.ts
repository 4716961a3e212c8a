// Failed sign-ins per client address and email, in memory (per instance): past
// `humanCheckAfter` failures a sign-in needs a solved proof of work, past `maxFailures` it
// answers 429 until the window (opened by the first failure) ends. A success clears the pair.
import { LRUCache } from 'lru-cache'

interface Window { startedAt: number, failures: number }

export interface SignInThrottleOptions {
  humanCheckAfter: number
  maxFailures: number
  windowMs: number
  /** Pairs tracked at once; the least recently failing go first. */
  maxEntries?: number
}

export class SignInThrottle {
  private readonly windows: LRUCache<string, Window>

  constructor (private readonly opts: SignInThrottleOptions) {
    this.windows = new LRUCache({ max: opts.maxEntries ?? 50_000 })
  }

  private current (key: string, now: number): Window | undefined {
    const w = this.windows.get(key)
    if (w !== undefined && now - w.startedAt >= this.opts.windowMs) {
      this.windows.delete(key)
      return undefined
    }
    return w
  }

  /** Seconds to wait when the pair is blocked, else 0. */
  retryAfterSeconds (key: string, now: number): number {
    const w = this.current(key, now)
    if (w === undefined || w.failures < this.opts.maxFailures) return 0
    return Math.max(1, Math.ceil((w.startedAt + this.opts.windowMs - now) / 1000))
  }

  needsHumanCheck (key: string, now: number): boolean {
    const w = this.current(key, now)
    return w !== undefined && w.failures >= this.opts.humanCheckAfter
  }

  fail (key: string, now: number): void {
    const w = this.current(key, now)
    if (w === undefined) this.windows.set(key, { startedAt: now, failures: 1 })
    else w.failures++
  }

  succeed (key: string): void {
    this.windows.delete(key)
  }
}
