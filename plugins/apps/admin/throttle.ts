// Failed admin authentications per client address. The token is compared in constant time, but
// nothing stopped a client from guessing as fast as the network allows; past `maxFailures` in
// one window, every admin call from that address is refused with 429 until the window ends,
// a correct token included (so a blocked guesser learns nothing from its guesses).
import { LRUCache } from 'lru-cache'
import { systemClock, type Clock } from '../../foundation/store/clock.js'

export interface AdminThrottleOptions {
  maxFailures: number
  windowMs: number
  clock?: Clock
  /** Addresses tracked at once; the least recently failing go first. Default 10 000. */
  maxAddresses?: number
}

interface Window {
  /** When the window opened (the address's first failure in it), epoch ms. */
  startedAt: number
  failures: number
}

export class AdminThrottle {
  private readonly windows: LRUCache<string, Window>
  private readonly clock: Clock

  constructor (private readonly opts: AdminThrottleOptions) {
    this.clock = opts.clock ?? systemClock
    // maxSize, one unit an entry: no slots preallocated at boot (see LocalLimits).
    this.windows = new LRUCache<string, Window>({ maxSize: opts.maxAddresses ?? 10_000, sizeCalculation: () => 1 })
  }

  /** Seconds the address must still wait, or 0 when it may try. */
  retryAfterSeconds (address: string): number {
    const w = this.current(address)
    if (w === undefined || w.failures < this.opts.maxFailures) return 0
    return Math.max(1, Math.ceil((w.startedAt + this.opts.windowMs - this.now()) / 1000))
  }

  fail (address: string): void {
    const w = this.current(address)
    if (w === undefined) this.windows.set(address, { startedAt: this.now(), failures: 1 })
    else w.failures++
  }

  /** A correct token clears the address's failures: an operator's typos do not add up. */
  succeed (address: string): void {
    this.windows.delete(address)
  }

  private current (address: string): Window | undefined {
    const w = this.windows.get(address)
    if (w === undefined) return undefined
    if (this.now() - w.startedAt >= this.opts.windowMs) {
      this.windows.delete(address)
      return undefined
    }
    return w
  }

  private now (): number {
    return this.clock.now().getTime()
  }
}
