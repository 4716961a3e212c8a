// Group commit: calls queue up while a batch is in flight and the next batch takes them
// all, so N concurrent callers share one statement and one durable commit instead of N.
// Backend-neutral; the PostgreSQL ledger runs its hold and settle statements through it.

/** What a batch decided for one item. */
export type ItemOutcome<O> =
  | { kind: 'done'; value: O }
  | { kind: 'failed'; error: Error }
  /** Not decided by this batch: goes back to the front of the queue for the next one. */
  | { kind: 'retry' }

export interface GroupCommitOptions {
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
}

interface Pending<I, O> {
  item: I
  resolve(value: O): void
  reject(error: Error): void
}

export class GroupCommit<I, O> {
  private queue: Array<Pending<I, O>> = []
  private inFlight = 0
  private scheduled = false
  private closed = false
  private idle: Array<() => void> = []

  /**
   * `run` answers one outcome per item, in order, or throws: then every item of the batch
   * fails with that error (a batch is one statement, so nothing of it was committed).
   * `key` (optional) keeps two items with the same key out of one batch.
   */
  constructor (
    private readonly run: (items: I[]) => Promise<Array<ItemOutcome<O>>>,
    private readonly opts: GroupCommitOptions,
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
      this.queue.push({ item, resolve, reject })
      this.schedule()
    })
  }

  /** Refuses new items and waits until every queued and in-flight item is answered. */
  async close (): Promise<void> {
    this.closed = true
    if (this.queue.length === 0 && this.inFlight === 0) return
    await new Promise<void>((resolve) => this.idle.push(resolve))
  }

  /** Callers of the same tick (or loop turn, with `immediate`) land in one batch. */
  private schedule (): void {
    if (this.scheduled) return
    this.scheduled = true
    const start = (): void => {
      this.scheduled = false
      this.pump()
    }
    if (this.opts.schedule === 'immediate') setImmediate(start)
    else queueMicrotask(start)
  }

  private pump (): void {
    while (this.inFlight < this.opts.maxInFlight && this.queue.length > 0) {
      const batch = this.take()
      this.inFlight++
      // Not awaited: execute() settles its batch's callers itself and never rejects.
      this.execute(batch)
    }
    if (this.queue.length === 0 && this.inFlight === 0) {
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
      this.queue.unshift(...retry)
      this.inFlight--
      this.pump()
    }
    try {
      this.opts.onBatch?.(batch.length, performance.now() - started)
    } catch {
      // An observer's bug must not stall the queue.
    }
  }
}
