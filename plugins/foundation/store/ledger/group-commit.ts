// Group commit: calls queue up while a batch is in flight and the next batch takes them
// all, so N concurrent callers share one statement and one durable commit instead of N.
// Backend-neutral; the PostgreSQL ledger runs its hold and settle statements through it.

/** What a batch decided for one item. */
export type ItemOutcome<O> =
  | { kind: 'done'; value: O }
  | { kind: 'failed'; error: Error }
  /** Not decided by this batch: goes back to the front of the queue for the next one. */
  | { kind: 'retry' }

export interface GroupCommitOptions<I = unknown> {
  /** Most items in one batch. */
  maxBatch: number
  /** Most batches in flight at once (each on its own connection). */
  maxInFlight: number
  /** Called after every batch with its size and duration (metrics, benchmarks). */
  onBatch?: ((size: number, ms: number) => void) | undefined
  /**
   * When a batch starts: `microtask` gathers the callers of one tick (a batch whose run is
   * asynchronous keeps gathering while it is in flight); `immediate` waits until the event
   * loop's I/O callbacks ran, so a synchronous run (SQLite) still gathers concurrent requests.
   */
  schedule?: 'microtask' | 'immediate'
  /**
   * Items that may wait for company: while the queue holds only such items, its batch starts
   * `ms` after the first of them instead of at once, or as soon as an item that may not wait
   * arrives and takes them along. One commit then carries, say, a request's settle and the next
   * request's hold: at one request at a time, a commit per request instead of two.
   */
  lazy?: { readonly ms: number, readonly item: (item: I) => boolean } | undefined
}

interface Pending<I, O> {
  /** Submission order: what a flush waits for. */
  seq: number
  item: I
  resolve(value: O): void
  reject(error: Error): void
}

export class GroupCommit<I, O> {
  private queue: Array<Pending<I, O>> = []
  private scheduled = false
  /** The start of a batch of lazy items only (see GroupCommitOptions.lazy). */
  private waiting: ReturnType<typeof setTimeout> | undefined
  private closed = false
  private idle: Array<() => void> = []
  /** Items submitted so far (the next item's seq). */
  private submitted = 0
  /** The batches being run (their count is the batches in flight). */
  private readonly flying = new Set<Array<Pending<I, O>>>()
  /** Flushes waiting until every item before `seq` is answered. */
  private flushes: Array<{ seq: number, resolve: () => void }> = []

  /**
   * `run` answers one outcome per item, in order, or throws: then every item of the batch
   * fails with that error (a batch is one statement, so nothing of it was committed).
   * `key` (optional) keeps two items with the same key out of one batch.
   */
  constructor (
    private readonly run: (items: I[]) => Promise<Array<ItemOutcome<O>>>,
    private readonly opts: GroupCommitOptions<I>,
    private readonly key?: (item: I) => string
  ) {
    if (!Number.isInteger(opts.maxBatch) || opts.maxBatch < 1) throw new RangeError('maxBatch must be a positive integer')
    if (!Number.isInteger(opts.maxInFlight) || opts.maxInFlight < 1) {
      throw new RangeError('maxInFlight must be a positive integer')
    }
  }

  submit (item: I): Promise<O> {
    if (this.closed) return Promise.reject(new Error('ledger store is closed'))
    return new Promise<O>((resolve, reject) => {
      this.queue.push({ seq: this.submitted++, item, resolve, reject })
      const lazy = this.opts.lazy
      if (lazy !== undefined && lazy.item(item)) this.wait(lazy.ms)
      else this.schedule()
    })
  }

  /** A lazy item queued: its batch starts after `ms`, unless one starts before. */
  private wait (ms: number): void {
    if (this.scheduled || this.waiting !== undefined) return
    this.waiting = setTimeout(() => {
      this.waiting = undefined
      this.pump()
    }, ms)
  }

  /**
   * Resolves once every item submitted before the call is answered, lazy ones started at once:
   * a read that must see what its own process wrote (a balance after an answer) flushes first.
   */
  async flush (): Promise<void> {
    if (this.queue.length === 0 && this.flying.size === 0) return
    const seq = this.submitted
    const done = new Promise<void>((resolve) => this.flushes.push({ seq, resolve }))
    this.pump()
    this.answerFlushes()
    await done
  }

  /** Resolves the flushes whose items are all answered: none queued or running comes before them. */
  private answerFlushes (): void {
    if (this.flushes.length === 0) return
    let oldest = this.submitted
    for (const pending of this.queue) if (pending.seq < oldest) oldest = pending.seq
    for (const batch of this.flying) for (const pending of batch) if (pending.seq < oldest) oldest = pending.seq
    const still: Array<{ seq: number, resolve: () => void }> = []
    for (const f of this.flushes) {
      if (f.seq <= oldest) f.resolve()
      else still.push(f)
    }
    this.flushes = still
  }

  /** Refuses new items and waits until every queued and in-flight item is answered. */
  async close (): Promise<void> {
    this.closed = true
    if (this.waiting !== undefined) this.pump()
    if (this.queue.length === 0 && this.flying.size === 0) return
    await new Promise<void>((resolve) => this.idle.push(resolve))
  }

  /** Callers of the same tick (or loop turn, with `immediate`) land in one batch. */
  private schedule (): void {
    // The lazy items queued so far go with this batch.
    this.stopWaiting()
    if (this.scheduled) return
    this.scheduled = true
    const start = (): void => {
      this.scheduled = false
      this.pump()
    }
    if (this.opts.schedule === 'immediate') setImmediate(start)
    else queueMicrotask(start)
  }

  /** A lazy wait is over: its items go with the batch starting now. */
  private stopWaiting (): void {
    if (this.waiting === undefined) return
    clearTimeout(this.waiting)
    this.waiting = undefined
  }

  private pump (): void {
    if (this.queue.length > 0 && this.flying.size < this.opts.maxInFlight) this.stopWaiting()
    while (this.flying.size < this.opts.maxInFlight && this.queue.length > 0) {
      const batch = this.take()
      this.flying.add(batch)
      // Not awaited: execute() settles its batch's callers itself and never rejects.
      this.execute(batch)
    }
    if (this.queue.length === 0 && this.flying.size === 0) {
      for (const resolve of this.idle.splice(0)) resolve()
    }
  }

  private take (): Array<Pending<I, O>> {
    if (!this.key) return this.queue.splice(0, this.opts.maxBatch)
    const batch: Array<Pending<I, O>> = []
    const keys = new Set<string>()
    const rest: Array<Pending<I, O>> = []
    for (const pending of this.queue) {
      const k = this.key(pending.item)
      if (batch.length < this.opts.maxBatch && !keys.has(k)) {
        keys.add(k)
        batch.push(pending)
      } else {
        rest.push(pending)
      }
    }
    this.queue = rest
    return batch
  }

  private async execute (batch: Array<Pending<I, O>>): Promise<void> {
    const retry: Array<Pending<I, O>> = []
    const started = performance.now()
    try {
      const outcomes = await this.run(batch.map((p) => p.item))
      if (outcomes.length !== batch.length) throw new Error(`batch answered ${outcomes.length} of ${batch.length} items`)
      batch.forEach((pending, i) => {
        const outcome = outcomes[i] as ItemOutcome<O>
        if (outcome.kind === 'done') pending.resolve(outcome.value)
        else if (outcome.kind === 'failed') pending.reject(outcome.error)
        else retry.push(pending)
      })
    } catch (err) {
      const error = err instanceof Error ? err : new Error(String(err))
      for (const pending of batch) pending.reject(error)
    } finally {
      this.flying.delete(batch)
      this.queue.unshift(...retry)
      this.pump()
      this.answerFlushes()
    }
    try {
      this.opts.onBatch?.(batch.length, performance.now() - started)
    } catch {
      // An observer's bug must not stall the queue.
    }
  }
}
