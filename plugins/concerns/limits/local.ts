import { LRUCache } from 'lru-cache'

/**
 * Sliding-window log of one key's admitted requests: the times of the last admissions, at
 * most `limit` of them, oldest first, in a ring that grows on demand (a generous limit costs
 * memory only for the requests actually made in the window).
 */
class Ring {
  times: number[] = new Array<number>(8)
  head = 0
  count = 0

  /** Forgets the admissions that left the window. */
  prune (since: number): void {
    const cap = this.times.length
    while (this.count > 0 && (this.times[this.head] as number) <= since) {
      this.head = (this.head + 1) % cap
      this.count--
    }
  }

  /** The admission `back` places before the newest (0: the newest). */
  at (back: number): number {
    return this.times[(this.head + this.count - 1 - back) % this.times.length] as number
  }

  push (t: number): void {
    let cap = this.times.length
    if (this.count === cap) {
      const next = new Array<number>(cap * 2)
      for (let i = 0; i < this.count; i++) next[i] = this.times[(this.head + i) % cap] as number
      this.times = next
      this.head = 0
      cap = next.length
    }
    this.times[(this.head + this.count) % cap] = t
    this.count++
  }
}

/**
 * The limits of one instance, when there is no Redis or Redis did not answer: the same
 * sliding window and the same stream counts, kept in memory.
 */
export class LocalLimits {
  private readonly windows: LRUCache<string, Ring>
  private readonly streams = new Map<string, Set<string>>()

  constructor (private readonly windowMs: number, max: number) {
    // maxSize at one unit an entry, not max: lru-cache preallocates `max` slots when it is built
    // (21 ms for 100,000 on the CI machine, at every boot and reload); maxSize grows as keys come.
    this.windows = new LRUCache<string, Ring>({ maxSize: max, sizeCalculation: () => 1, ttl: windowMs, updateAgeOnGet: true })
  }

  /** Admits one request of `key` at `now` (ms) under `limit` per window: 0, or the ms to wait. */
  take (key: string, limit: number, now: number): number {
    const wait = this.wait(key, limit, now)
    if (wait === 0) this.record(key, now)
    return wait
  }

  /**
   * What admitting one more request of `key` at `now` would cost, without counting it: 0 when it
   * fits under `limit`, else the ms until the admission that must leave the window does so. An
   * admission counted in two windows (the key's and its account's) is asked of both first, then
   * recorded in both, so a refusal by one never fills the other.
   */
  wait (key: string, limit: number, now: number): number {
    const ring = this.windows.get(key)
    if (ring === undefined) return 0
    ring.prune(now - this.windowMs)
    if (ring.count < limit) return 0
    // The admission that must leave the window before one more fits (limit lowered: an older one).
    return Math.max(1, ring.at(limit - 1) + this.windowMs - now)
  }

  /** Counts one admission of `key` at `now` (after `wait` said it fits). */
  record (key: string, now: number): void {
    let ring = this.windows.get(key)
    if (ring === undefined) {
      ring = new Ring()
      this.windows.set(key, ring)
    }
    ring.push(now)
  }

  /** Takes a stream lease of `owner` (an account or a key) for `id` unless `limit` are held; true when taken. */
  acquire (owner: string, id: string, limit: number): boolean {
    let held = this.streams.get(owner)
    if (held === undefined) {
      held = new Set()
      this.streams.set(owner, held)
    }
    if (held.size >= limit) return false
    held.add(id)
    return true
  }

  release (owner: string, id: string): void {
    const held = this.streams.get(owner)
    if (held === undefined) return
    held.delete(id)
    if (held.size === 0) this.streams.delete(owner)
  }

  streamsOf (owner: string): number {
    return this.streams.get(owner)?.size ?? 0
  }
}
