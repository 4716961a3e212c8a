// Per-instance cache of authenticated keys: lookup hash → key + owning account.
//
// Auth reads it on every request; store mutations publish on the invalidation bus
// and every instance drops the affected entries. The TTL bounds staleness when a
// message is lost (e.g. Redis briefly away).
import { LRUCache } from 'lru-cache'
import type { Clock } from '../../foundation/store/clock.js'
import type { Account, ApiKeyRecord } from '../../foundation/store/types.js'
import type { InvalidationBus, InvalidationMessage } from '../../foundation/keys/invalidation-bus.js'

export interface CachedKey {
  key: ApiKeyRecord
  account: Account
}

export interface KeyCacheOptions {
  /** Default 10 000 entries. */
  max?: number
  /** Default 30 000 ms. */
  ttlMs?: number
  /** For tests that move time; default the monotonic clock. */
  clock?: Clock
  /** Subscribed at construction; close() unsubscribes. */
  bus?: InvalidationBus
  /** How long a lookup hash that matched no key is remembered; 0 turns this off. Default 5 000 ms. */
  unknownTtlMs?: number
  /** Most unknown hashes remembered; default 100 000. */
  unknownMax?: number
}

export const DEFAULT_KEY_CACHE_MAX = 10_000
export const DEFAULT_KEY_CACHE_TTL_MS = 30_000
export const DEFAULT_UNKNOWN_KEY_TTL_MS = 5_000
export const DEFAULT_UNKNOWN_KEY_MAX = 100_000

export class KeyCache {
  private readonly lru: LRUCache<string, CachedKey>
  // Hashes that matched no key. A well-formed key's checksum is computable offline, so a client
  // can mint any number of them; each would otherwise cost a store lookup on every request.
  private readonly unknown: LRUCache<string, true> | null
  // Reverse indexes so an invalidation by key or account id finds the hashes.
  private readonly byKey = new Map<string, string>()
  private readonly byAccount = new Map<string, Set<string>>()
  private readonly unsubscribe: (() => void) | undefined
  // Bumped on every invalidation; a load that started before one is not cached,
  // since what it read may predate the change.
  private epoch = 0

  constructor (opts: KeyCacheOptions = {}) {
    const clock = opts.clock
    // Both bounded by maxSize at one unit an entry, not max: lru-cache preallocates `max` slots
    // when it is built (21 ms for 100,000 on the CI machine, at every boot); maxSize grows as keys come.
    this.lru = new LRUCache<string, CachedKey>({
      maxSize: opts.max ?? DEFAULT_KEY_CACHE_MAX,
      sizeCalculation: () => 1,
      ttl: opts.ttlMs ?? DEFAULT_KEY_CACHE_TTL_MS,
      ...(clock ? { perf: { now: () => clock.now().getTime() }, ttlResolution: 0 } : {}),
      dispose: (value, hash) => this.unindex(value, hash),
    })
    const unknownTtl = opts.unknownTtlMs ?? DEFAULT_UNKNOWN_KEY_TTL_MS
    this.unknown = unknownTtl > 0
      ? new LRUCache<string, true>({
        maxSize: opts.unknownMax ?? DEFAULT_UNKNOWN_KEY_MAX,
        sizeCalculation: () => 1,
        ttl: unknownTtl,
        ...(clock ? { perf: { now: () => clock.now().getTime() }, ttlResolution: 0 } : {}),
      })
      : null
    this.unsubscribe = opts.bus?.subscribe((message) => this.apply(message))
  }

  get size (): number {
    return this.lru.size
  }

  /** Lookup hashes currently remembered as matching no key. */
  get unknownSize (): number {
    return this.unknown?.size ?? 0
  }

  get (lookupHash: string): CachedKey | undefined {
    return this.lru.get(lookupHash)
  }

  set (lookupHash: string, entry: CachedKey): void {
    this.lru.set(lookupHash, entry)
    this.byKey.set(entry.key.id, lookupHash)
    let hashes = this.byAccount.get(entry.account.id)
    if (!hashes) this.byAccount.set(entry.account.id, (hashes = new Set()))
    hashes.add(lookupHash)
  }

  /** Cached entry, or the loader's answer (cached unless an invalidation arrived meanwhile). */
  async getOrLoad (lookupHash: string, load: (hash: string) => Promise<CachedKey | null>): Promise<CachedKey | null> {
    const hit = this.lru.get(lookupHash)
    if (hit) return hit
    if (this.unknown?.get(lookupHash) === true) return null
    const started = this.epoch
    const loaded = await load(lookupHash)
    if (started === this.epoch) {
      if (loaded) this.set(lookupHash, loaded)
      // A miss is remembered briefly; creating any key (a key message) forgets every miss, so a
      // key created a moment ago works on its first request, on every instance.
      else this.unknown?.set(lookupHash, true)
    }
    return loaded
  }

  invalidateKey (keyId: string): void {
    this.epoch++
    this.unknown?.clear()
    const hash = this.byKey.get(keyId)
    if (hash !== undefined) this.lru.delete(hash)
  }

  invalidateAccount (accountId: string): void {
    this.epoch++
    for (const hash of [...(this.byAccount.get(accountId) ?? [])]) this.lru.delete(hash)
  }

  clear (): void {
    this.epoch++
    this.lru.clear()
    this.unknown?.clear()
  }

  /** Stops listening to the bus; the bus itself belongs to whoever created it. */
  close (): void {
    this.unsubscribe?.()
  }

  private apply (message: InvalidationMessage): void {
    if (message.kind === 'key') this.invalidateKey(message.id)
    else if (message.kind === 'account') this.invalidateAccount(message.id)
    else this.clear()
  }

  private unindex (value: CachedKey, hash: string): void {
    if (this.byKey.get(value.key.id) === hash) this.byKey.delete(value.key.id)
    const hashes = this.byAccount.get(value.account.id)
    if (!hashes) return
    hashes.delete(hash)
    if (hashes.size === 0) this.byAccount.delete(value.account.id)
  }
}
