// Password hashing for the console, bounded: scrypt already runs on libuv's thread pool, off the
// event loop, but each hash is ~100 ms of a core and 32 MiB; a sign-in flood hashing on every
// pool thread at once starves model traffic of CPU. At most `concurrency` hashes run at once;
// up to `queue` more wait; beyond that the request is refused with LIMIT_RATE_EXCEEDED
// (Retry-After: 1) before any work. Callers throttle before they get here. New hashes take the
// configured cost (console.password_scrypt_*); a stored hash is checked with its own.
import pLimit, { type LimitFunction } from 'p-limit'
import { gatewayError } from '../../foundation/errors/index.js'
import { DEFAULT_SCRYPT_COST, hashPassword, verifyPassword, type ScryptCost } from './secrets.js'

export class PasswordHasher {
  private readonly limit: LimitFunction

  constructor (private readonly concurrency: number, private readonly queue: number, readonly cost: ScryptCost = DEFAULT_SCRYPT_COST) {
    this.limit = pLimit(concurrency)
  }

  /** Hashes running and waiting now. */
  get load (): number {
    return this.limit.activeCount + this.limit.pendingCount
  }

  hash (password: string): Promise<string> {
    return this.run(() => hashPassword(password, this.cost))
  }

  verify (password: string, stored: string): Promise<boolean> {
    return this.run(() => verifyPassword(password, stored))
  }

  private run<T> (work: () => Promise<T>): Promise<T> {
    if (this.load >= this.concurrency + this.queue) {
      return Promise.reject(gatewayError('LIMIT_RATE_EXCEEDED', { retryAfterSeconds: 1, detail: 'Too many password checks at once; try again in a second.' }))
    }
    return this.limit(work)
  }
}
