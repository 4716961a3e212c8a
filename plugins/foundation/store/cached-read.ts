// A value read from the database every instance shares, trusted for a short time: what the
// admin API switches there (an image pause, a model's status) reaches every instance within
// `ttlMs`, and the request path reads the database at most once per `ttlMs` per instance.

export class CachedRead<K, V> {
  private key: K | undefined
  private value: V | undefined
  private until = 0
  private pending: { key: K, read: Promise<V> } | null = null

  constructor (private readonly load: (key: K) => Promise<V>, private readonly ttlMs: number) {}

  /**
   * The value for `key`: synchronous while the last read holds, else one read shared by every
   * caller until it answers (a failed read is not kept: the next caller tries again).
   */
  read (key: K): V | Promise<V> {
    if (key === this.key && performance.now() < this.until) return this.value as V
    if (this.pending?.key === key) return this.pending.read
    const read = this.load(key).then((value) => {
      this.key = key
      this.value = value
      this.until = performance.now() + this.ttlMs
      return value
    }).finally(() => { if (this.pending?.read === read) this.pending = null })
    this.pending = { key, read }
    return read
  }
}
