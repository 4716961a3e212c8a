// Batches request log rows off the hot path. write() only validates and queues (O(1),
// never touches the database); a timer flushes a batch every flushIntervalMs, or at
// once when a full batch is waiting. One insert is in flight at a time. A failed insert
// puts its rows back at the front and retries with exponential backoff; the queue is
// bounded by maxQueue (the oldest rows not in flight are dropped and reported). close()
// drains everything, including rows written while it runs, before it resolves.
import { RequestLogError } from './errors.js'
import { RowQueue } from './row-queue.js'
import type { RequestLogRow, RequestLogStore } from './types.js'
import { checkRequestLogRow, looksLikeKey } from './validate.js'

/** Injected so tests can drive time; the defaults are the global timers. */
export interface WriterTimers {
  setTimeout(callback: () => void, ms: number): unknown
  clearTimeout(handle: unknown): void
}

export const systemTimers: WriterTimers = {
  setTimeout: (callback, ms) => setTimeout(callback, ms),
  clearTimeout: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
}

export interface RequestLogWriterOptions {
  /** Rows per insert; default 500. With SQLite a batch holds the event loop ~4 ms (measured). */
  maxBatch?: number
  /** Longest a queued row waits before a flush starts; default 100. */
  flushIntervalMs?: number
  /** Most rows held (queued + in flight); default 100,000. At least maxBatch. */
  maxQueue?: number
  /** First retry delay after a failed insert, doubled per failure; default 100. */
  retryBaseMs?: number
  /** Longest retry delay; default 5,000. */
  retryMaxMs?: number
  /** close() stops retrying after this long and reports what is left; default 10,000. */
  closeTimeoutMs?: number
  timers?: WriterTimers
  /**
   * Every problem, with the rows concerned (a key-like keyId is redacted to null first).
   * Called from write() for INVALID_ROW and WRITER_CLOSED; must not throw, keep it cheap.
   */
  onError(err: RequestLogError, rows: readonly RequestLogRow[]): void
}

const EMPTY: readonly RequestLogRow[] = []
const noop = (): void => {}

function positiveInteger (name: string, value: number): number {
  if (!Number.isSafeInteger(value) || value < 1) throw new RangeError(`${name} must be a positive integer`)
  return value
}

function milliseconds (name: string, value: number): number {
  if (!Number.isFinite(value) || value < 0) throw new RangeError(`${name} must be a finite number >= 0`)
  return value
}

/** Rows handed to onError never carry something that looks like a plaintext key. */
function redacted (row: RequestLogRow): RequestLogRow {
  return typeof row?.keyId === 'string' && looksLikeKey(row.keyId) ? { ...row, keyId: null } : row
}

export class RequestLogWriter {
  readonly #store: RequestLogStore
  readonly #maxBatch: number
  readonly #flushIntervalMs: number
  readonly #maxQueue: number
  readonly #retryBaseMs: number
  readonly #retryMaxMs: number
  readonly #closeTimeoutMs: number
  readonly #timers: WriterTimers
  readonly #onError: RequestLogWriterOptions['onError']

  readonly #queue = new RowQueue<RequestLogRow>()
  /** The batch being inserted; its rows count as pending until the insert ends. */
  #batch: readonly RequestLogRow[] = EMPTY
  /** Settles with the insert's error (or null) when the batch in flight is done. */
  #flight: Promise<Error | null> | null = null
  #timer: unknown = undefined
  #timerArmed = false
  #timerDelay = 0
  #failures = 0
  /** Dropped by the maxQueue bound, reported in batches rather than one call per write. */
  #dropped: RequestLogRow[] = []
  #state: 'open' | 'closing' | 'closed' = 'open'
  #closing: Promise<void> | null = null

  constructor (store: RequestLogStore, opts: RequestLogWriterOptions) {
    if (typeof opts?.onError !== 'function') throw new TypeError('onError must be a function')
    this.#store = store
    this.#maxBatch = positiveInteger('maxBatch', opts.maxBatch ?? 500)
    this.#flushIntervalMs = milliseconds('flushIntervalMs', opts.flushIntervalMs ?? 100)
    this.#maxQueue = positiveInteger('maxQueue', opts.maxQueue ?? 100_000)
    if (this.#maxQueue < this.#maxBatch) throw new RangeError('maxQueue must be at least maxBatch')
    this.#retryBaseMs = milliseconds('retryBaseMs', opts.retryBaseMs ?? 100)
    this.#retryMaxMs = milliseconds('retryMaxMs', opts.retryMaxMs ?? 5_000)
    if (this.#retryMaxMs < this.#retryBaseMs) throw new RangeError('retryMaxMs must be at least retryBaseMs')
    this.#closeTimeoutMs = milliseconds('closeTimeoutMs', opts.closeTimeoutMs ?? 10_000)
    this.#timers = opts.timers ?? systemTimers
    this.#onError = opts.onError
  }

  /** Rows accepted and not yet stored or dropped (queued + in flight). */
  get pending (): number {
    return this.#queue.length + this.#batch.length
  }

  /** Queues the row; synchronous, O(1), never waits for the database. The writer owns the row from here. */
  write (row: RequestLogRow): void {
    if (this.#state === 'closed') {
      this.#report(new RequestLogError('WRITER_CLOSED', 'request log writer is closed; row not stored'), [redacted(row)])
      return
    }
    const problem = checkRequestLogRow(row)
    if (problem !== null) {
      this.#report(new RequestLogError('INVALID_ROW', `request log row refused: ${problem}`), [redacted(row)])
      return
    }
    this.#queue.push(row)
    if (this.pending > this.#maxQueue) {
      // The oldest row not in flight: the batch in flight may still succeed.
      const oldest = this.#queue.shift()
      if (oldest !== undefined) this.#drop(oldest)
    }
    this.#schedule()
  }

  /**
   * Writes every row pending at the call, waiting for the insert in flight first.
   * Rejects with the first failed insert it sees (those rows stay queued for the retry).
   */
  async flush (): Promise<void> {
    let rounds = (this.#flight ? 1 : 0) + Math.ceil(this.#queue.length / this.#maxBatch)
    while (rounds > 0) {
      rounds -= 1
      const flight = this.#flight ?? (this.#queue.length > 0 ? this.#fly() : null)
      if (flight === null) return
      const error = await flight
      if (error) throw error
    }
  }

  /**
   * Stops the timer and drains every row, including the batch in flight and rows written
   * meanwhile, retrying failed inserts with backoff. After closeTimeoutMs it gives up and
   * hands the rest to onError (CLOSE_TIMEOUT). Call it after the server stopped taking
   * requests; rows written after it resolved are refused (WRITER_CLOSED). Idempotent.
   */
  close (): Promise<void> {
    this.#closing ??= this.#drain()
    return this.#closing
  }

  async #drain (): Promise<void> {
    this.#state = 'closing'
    this.#disarm()
    let expired = false
    let deadline: unknown
    const expiry = new Promise<null>((resolve) => {
      deadline = this.#timers.setTimeout(() => {
        expired = true
        resolve(null)
      }, this.#closeTimeoutMs)
    })
    try {
      // `expired` is set by the deadline timer while this loop awaits.
      for (;;) {
        if (expired) break
        const flight = this.#flight ?? (this.#queue.length > 0 ? this.#fly() : null)
        if (flight === null) break
        const error = await Promise.race([flight, expiry])
        if (error && !expired) await this.#sleep(this.#retryDelay(), expiry)
      }
    } finally {
      this.#timers.clearTimeout(deadline)
      this.#state = 'closed'
      this.#reportDropped()
      const left = this.#queue.takeAll()
      if (left.length > 0) {
        this.#report(
          new RequestLogError('CLOSE_TIMEOUT', `request log close gave up after ${this.#closeTimeoutMs} ms; ${left.length} rows not stored`),
          left
        )
      }
    }
  }

  async #sleep (ms: number, expiry: Promise<null>): Promise<void> {
    let handle: unknown
    const slept = new Promise<null>((resolve) => {
      handle = this.#timers.setTimeout(() => resolve(null), ms)
    })
    await Promise.race([slept, expiry])
    this.#timers.clearTimeout(handle)
  }

  /** Starts inserting the next batch; precondition: nothing in flight, queue not empty. */
  #fly (): Promise<Error | null> {
    this.#disarm()
    const batch = this.#queue.take(this.#maxBatch)
    this.#batch = batch
    let settle: (error: Error | null) => void = noop
    // Assigned before the insert starts, so a store that throws synchronously still clears it.
    const flight = new Promise<Error | null>((resolve) => {
      settle = resolve
    })
    this.#flight = flight
    // Not awaited here: its outcome reaches callers through `flight`.
    this.#insert(batch, settle)
    return flight
  }

  async #insert (batch: readonly RequestLogRow[], settle: (error: Error | null) => void): Promise<void> {
    let error: RequestLogError | null = null
    try {
      await this.#store.insertMany(batch)
      this.#failures = 0
    } catch (cause) {
      this.#failures += 1
      this.#batch = EMPTY
      const reason = cause instanceof Error ? cause.message : String(cause)
      if (this.#state === 'closed') {
        error = new RequestLogError('CLOSE_TIMEOUT', `request log insert failed after close gave up: ${reason}`, { cause })
      } else {
        this.#queue.unshiftAll(batch)
        error = new RequestLogError(
          'FLUSH_FAILED',
          `request log insert of ${batch.length} rows failed (attempt ${this.#failures}), ` +
            `retrying in ${this.#retryDelay()} ms: ${reason}`,
          { cause }
        )
      }
      this.#report(error, batch)
    } finally {
      this.#batch = EMPTY
      this.#flight = null
      settle(error)
      this.#reportDropped()
      this.#schedule()
    }
  }

  #retryDelay (): number {
    return Math.min(this.#retryMaxMs, this.#retryBaseMs * 2 ** Math.max(0, this.#failures - 1))
  }

  /** Arms the timer for the next flush; close() drives flushes itself. */
  #schedule (): void {
    if (this.#flight !== null || this.#state !== 'open' || this.#queue.length === 0) return
    if (this.#failures > 0) this.#arm(this.#retryDelay())
    else this.#arm(this.#queue.length >= this.#maxBatch ? 0 : this.#flushIntervalMs)
  }

  #arm (delay: number): void {
    if (this.#timerArmed) {
      // Only a full batch pulls an armed flush earlier; the cheap path for every write.
      if (delay >= this.#timerDelay) return
      this.#timers.clearTimeout(this.#timer)
    }
    this.#timerArmed = true
    this.#timerDelay = delay
    this.#timer = this.#timers.setTimeout(() => this.#onTimer(), delay)
  }

  #disarm (): void {
    if (!this.#timerArmed) return
    this.#timers.clearTimeout(this.#timer)
    this.#timerArmed = false
    this.#timer = undefined
  }

  #onTimer (): void {
    this.#timerArmed = false
    this.#timer = undefined
    this.#reportDropped()
    // A timer-driven insert reports its failure through onError; nobody awaits it.
    if (this.#flight === null && this.#state === 'open' && this.#queue.length > 0) this.#fly()
  }

  #drop (row: RequestLogRow): void {
    this.#dropped.push(row)
    if (this.#dropped.length >= this.#maxBatch) this.#reportDropped()
  }

  #reportDropped (): void {
    if (this.#dropped.length === 0) return
    const rows = this.#dropped
    this.#dropped = []
    this.#report(
      new RequestLogError('QUEUE_FULL', `request log queue full (maxQueue ${this.#maxQueue}); dropped the ${rows.length} oldest rows`),
      rows
    )
  }

  #report (err: RequestLogError, rows: readonly RequestLogRow[]): void {
    try {
      this.#onError(err, rows)
    } catch (thrown) {
      // The reporter failing must not break the request that wrote the row.
      process.emitWarning(`request log onError threw: ${thrown instanceof Error ? thrown.message : String(thrown)}`)
    }
  }
}
