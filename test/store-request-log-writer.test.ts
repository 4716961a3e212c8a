// RequestLogWriter against the real SQLite and PostgreSQL request log stores. The
// DatabaseDouble wrapper stands in for the database misbehaving (slow, down, blocked,
// losing the commit acknowledgement); the writer under test is always the real one.
import { performance } from 'node:perf_hooks'
import t from 'tap'
import type { RequestLogRow, RequestLogStore, Store } from '../plugins/foundation/store/index.js'
import { RequestLogError, RequestLogWriter } from '../plugins/foundation/store/request-log/index.js'
import type { RequestLogWriterOptions, WriterTimers } from '../plugins/foundation/store/request-log/index.js'
import { testBackends } from './helpers/store.js'

const T0 = Date.parse('2030-01-01T00:00:00.000Z')
const noop = (): void => {}

function row (requestId: string, i = 0, fields: Partial<RequestLogRow> = {}): RequestLogRow {
  return {
    requestId,
    accountId: 'acct_writer',
    keyId: 'key_writer',
    route: 'POST /v1/chat/completions',
    operation: 'chat.completions',
    requestedModel: 'gpt-4o-mini',
    answeredModel: 'gpt-4o-mini',
    status: 200,
    outcome: 'completed',
    errorCode: null,
    stream: true,
    usage: { inputTokens: 10, outputTokens: i, cachedInputTokens: 0, images: 0, audioSeconds: 0, characters: 0, calls: 0, jobs: 0 },
    usageReported: true,
    cost: 1_000_000_000n + BigInt(i),
    held: 2_000_000_000n,
    holdId: `hold-${requestId}`,
    postingId: `post-${requestId}`,
    overage: null,
    unrecovered: null,
    billingStatus: 'BILLED',
    idempotencyKey: null,
    overheadMs: 0.8,
    upstreamMs: 100,
    totalMs: 101,
    createdAt: new Date(T0 + i),
    ...fields,
  }
}

const ids = (prefix: string, from: number, to: number): string[] =>
  Array.from({ length: to - from }, (_, k) => `${prefix}${from + k}`)

/** Test double of the database: wraps the real store and misbehaves on request. */
class DatabaseDouble implements RequestLogStore {
  calls = 0
  completed = 0
  active = 0
  maxActive = 0
  delayMs = 0
  /** Fail this many inserts before reaching the database. */
  failBefore = 0
  /** Commit this many inserts, then fail as if the acknowledgement was lost. */
  failAfterCommit = 0
  #gate: Promise<void> | null = null
  #openGate: () => void = noop
  #onStart: Array<() => void> = []
  /** The insert most recently started, settled either way. */
  last: Promise<void> = Promise.resolve()

  constructor (readonly inner: RequestLogStore) {}

  block (): void {
    this.#gate = new Promise((resolve) => {
      this.#openGate = resolve
    })
  }

  unblock (): void {
    this.#gate = null
    this.#openGate()
  }

  /** Resolves when the next insert starts. */
  nextStart (): Promise<void> {
    return new Promise((resolve) => this.#onStart.push(resolve))
  }

  insertMany (rows: readonly RequestLogRow[]): Promise<void> {
    const call = this.#insert(rows)
    this.last = call.then(noop, noop)
    return call
  }

  async #insert (rows: readonly RequestLogRow[]): Promise<void> {
    this.calls += 1
    this.active += 1
    this.maxActive = Math.max(this.maxActive, this.active)
    for (const started of this.#onStart.splice(0)) started()
    try {
      if (this.delayMs > 0) await new Promise((resolve) => setTimeout(resolve, this.delayMs))
      if (this.#gate) await this.#gate
      if (this.failBefore > 0) {
        this.failBefore -= 1
        throw new Error('database unavailable')
      }
      await this.inner.insertMany(rows)
      if (this.failAfterCommit > 0) {
        this.failAfterCommit -= 1
        throw new Error('connection reset after commit')
      }
      this.completed += 1
    } finally {
      this.active -= 1
    }
  }

  list (q: Parameters<RequestLogStore['list']>[0]): ReturnType<RequestLogStore['list']> {
    return this.inner.list(q)
  }

  get (requestId: string): ReturnType<RequestLogStore['get']> {
    return this.inner.get(requestId)
  }
}

/** Timers the test advances by hand. */
class FakeTimers implements WriterTimers {
  now = 0
  #next = 1
  readonly #due = new Map<number, { at: number; ms: number; callback: () => void }>()

  setTimeout (callback: () => void, ms: number): unknown {
    const id = this.#next++
    this.#due.set(id, { at: this.now + ms, ms, callback })
    return id
  }

  clearTimeout (handle: unknown): void {
    if (typeof handle === 'number') this.#due.delete(handle)
  }

  /** Delays of the timers still armed, as they were armed. */
  armed (): number[] {
    return [...this.#due.values()].map((d) => d.ms).sort((a, b) => a - b)
  }

  advance (ms: number): void {
    const end = this.now + ms
    for (;;) {
      let first: [number, { at: number; callback: () => void }] | undefined
      for (const entry of this.#due) if (entry[1].at <= end && (!first || entry[1].at < first[1].at)) first = entry
      if (!first) break
      this.#due.delete(first[0])
      this.now = first[1].at
      first[1].callback()
    }
    this.now = end
  }
}

interface Reported {
  err: RequestLogError
  rows: readonly RequestLogRow[]
}

function writerWith (
  db: RequestLogStore,
  opts: Partial<RequestLogWriterOptions> = {}
): { writer: RequestLogWriter; reported: Reported[] } {
  const reported: Reported[] = []
  const writer = new RequestLogWriter(db, { onError: (err, rows) => reported.push({ err, rows }), ...opts })
  return { writer, reported }
}

async function storedIds (store: Store, prefix: string): Promise<string[]> {
  const pattern = `${prefix}%`
  const found =
    store.backend.kind === 'sqlite'
      ? store.backend.db.prepare<[string], string>('SELECT request_id FROM request_log WHERE request_id LIKE ?').pluck().all(pattern)
      : (await store.backend.pool.query<{ request_id: string }>('SELECT request_id FROM request_log WHERE request_id LIKE $1', [pattern])).rows.map((r) => r.request_id)
  return found.sort()
}

async function waitFor (what: string, condition: () => boolean, timeoutMs = 10_000): Promise<void> {
  const start = performance.now()
  while (!condition()) {
    if (performance.now() - start > timeoutMs) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 2))
  }
}

/** Lets the insert in flight (real database I/O) and the writer's bookkeeping finish. */
async function settle (db: DatabaseDouble): Promise<void> {
  await db.last
  await new Promise((resolve) => setImmediate(resolve))
}

const sorted = (xs: string[]): string[] => [...xs].sort()

for (const backend of testBackends()) {
  t.test(`request log writer (${backend.name})`, async (t) => {
    t.teardown(() => backend.cleanup())
    const store = await backend.open()

    t.test('10,000 writes: every row is stored after close()', async (t) => {
      const db = new DatabaseDouble(store.requestLog)
      const { writer, reported } = writerWith(db)
      for (let i = 0; i < 10_000; i++) writer.write(row(`bulk-${i}`, i, { accountId: 'acct_bulk' }))
      t.equal(writer.pending, 10_000, 'all queued, nothing written inside write()')
      t.equal(db.calls, 0)
      await writer.close()
      t.equal(writer.pending, 0)
      t.same(await storedIds(store, 'bulk-'), sorted(ids('bulk-', 0, 10_000)))
      t.equal(db.calls, 20, 'batches of 500')
      t.equal(db.maxActive, 1, 'one insert in flight at a time')
      t.same(reported.map((r) => r.err.message), [], 'nothing reported')
      // Page through the whole account: the list sees them all, newest first.
      const seen: string[] = []
      let before: string | null = null
      do {
        const page = await store.requestLog.list({ accountId: 'acct_bulk', limit: 1000, ...(before ? { before } : {}) })
        seen.push(...page.rows.map((r) => r.requestId))
        before = page.nextBefore
      } while (before !== null)
      t.same(seen, ids('bulk-', 0, 10_000).reverse())
      t.same(await store.requestLog.get('bulk-9999'), row('bulk-9999', 9999, { accountId: 'acct_bulk' }))
    })

    t.test('write() returns at once while the database is slow', async (t) => {
      const db = new DatabaseDouble(store.requestLog)
      db.delayMs = 400
      const { writer, reported } = writerWith(db, { maxBatch: 100, flushIntervalMs: 5 })
      for (let i = 0; i < 100; i++) writer.write(row(`slow-${i}`, i))
      await db.nextStart()
      t.equal(db.active, 1, 'a 400 ms insert is running')
      const started = performance.now()
      let slowest = 0
      let returned: unknown
      for (let i = 100; i < 5100; i++) {
        const before = performance.now()
        returned = writer.write(row(`slow-${i}`, i))
        slowest = Math.max(slowest, performance.now() - before)
      }
      const elapsed = performance.now() - started
      t.equal(returned, undefined, 'write() is synchronous: nothing to await')
      t.equal(db.completed, 0, 'every write returned while the first insert was still running')
      t.ok(elapsed < 200, `5,000 writes took ${elapsed.toFixed(1)} ms, far below one 400 ms insert`)
      t.ok(slowest < 100, `slowest write ${slowest.toFixed(2)} ms`)
      t.equal(writer.pending, 5100)
      // The event loop stays free while the insert runs.
      const tick = performance.now()
      await new Promise((resolve) => setImmediate(resolve))
      t.ok(performance.now() - tick < 100, 'event loop not held by the writer')
      t.equal(db.completed, 0)
      db.delayMs = 0 // the database recovers its speed: 50 more batches at 400 ms would outlast closeTimeoutMs
      await writer.close()
      t.equal(await storedIds(store, 'slow-').then((x) => x.length), 5100)
      t.equal(db.maxActive, 1)
      t.same(reported.map((r) => r.err.message), [], 'nothing reported')
    })

    t.test('a failing database, then recovering: nothing lost, nothing doubled', async (t) => {
      const db = new DatabaseDouble(store.requestLog)
      db.failBefore = 3
      const { writer, reported } = writerWith(db, { maxBatch: 100, flushIntervalMs: 5, retryBaseMs: 5, retryMaxMs: 20 })
      for (let i = 0; i < 1000; i++) writer.write(row(`flaky-${i}`, i))
      await waitFor('the queue to drain', () => writer.pending === 0)
      t.equal(reported.length, 3, 'each failed insert reported once')
      for (const { err, rows } of reported) {
        t.ok(err instanceof RequestLogError)
        t.equal(err.code, 'FLUSH_FAILED')
        t.equal(err.dropped, false, 'rows kept for the retry')
        t.match(err.message, /database unavailable/)
        t.same(rows.map((r) => r.requestId), ids('flaky-', 0, 100), 'the oldest batch is the one retried')
      }
      t.same(await storedIds(store, 'flaky-'), sorted(ids('flaky-', 0, 1000)))

      // The commit happened but its acknowledgement was lost: the retry re-sends rows that are
      // already stored, and the duplicate requestIds are ignored.
      db.failAfterCommit = 2
      for (let i = 1000; i < 1500; i++) writer.write(row(`flaky-${i}`, i))
      await waitFor('the queue to drain', () => writer.pending === 0)
      t.equal(reported.length, 5)
      t.same(await storedIds(store, 'flaky-'), sorted(ids('flaky-', 0, 1500)), 'each row exactly once')
      await writer.close()
      t.equal(db.maxActive, 1)
    })

    t.test('close() during an in-flight flush drains everything', async (t) => {
      const db = new DatabaseDouble(store.requestLog)
      db.delayMs = 150
      const { writer, reported } = writerWith(db, { maxBatch: 100, flushIntervalMs: 10_000 })
      for (let i = 0; i < 250; i++) writer.write(row(`closing-${i}`, i))
      await db.nextStart()
      t.equal(db.active, 1, 'a batch is in flight')
      for (let i = 250; i < 300; i++) writer.write(row(`closing-${i}`, i))
      const flushing = writer.flush()
      const closing = writer.close()
      for (let i = 300; i < 330; i++) writer.write(row(`closing-${i}`, i))
      t.equal(writer.pending, 330, 'rows written while closing are accepted')
      await Promise.all([closing, flushing])
      t.equal(writer.pending, 0)
      t.same(await storedIds(store, 'closing-'), sorted(ids('closing-', 0, 330)))
      t.equal(db.maxActive, 1, 'flush(), close() and the timer never overlap inserts')
      t.same(reported.map((r) => r.err.message), [], 'nothing reported')

      writer.write(row('closing-late'))
      t.equal(reported.length, 1)
      t.equal(reported[0]?.err.code, 'WRITER_CLOSED')
      t.equal(reported[0]?.err.dropped, true)
      await writer.close()
      t.pass('close() is idempotent')
      t.equal(await store.requestLog.get('closing-late'), null)
    })

    t.test('maxQueue bound while the database is blocked: oldest queued rows dropped and reported', async (t) => {
      const db = new DatabaseDouble(store.requestLog)
      db.block()
      const { writer, reported } = writerWith(db, { maxBatch: 100, maxQueue: 1000, flushIntervalMs: 1 })
      for (let i = 0; i < 100; i++) writer.write(row(`bound-${i}`, i))
      await db.nextStart()
      let maxPending = 0
      for (let i = 100; i < 5000; i++) {
        writer.write(row(`bound-${i}`, i))
        maxPending = Math.max(maxPending, writer.pending)
      }
      t.equal(maxPending, 1000, 'never more than maxQueue rows held')
      t.equal(writer.pending, 1000)
      t.ok(reported.every((r) => r.err.code === 'QUEUE_FULL' && r.err.dropped))
      t.same(
        reported.flatMap((r) => r.rows.map((x) => x.requestId)),
        ids('bound-', 100, 4100),
        'the oldest rows not in flight, in order; the batch in flight is kept'
      )
      t.ok(reported.every((r) => r.rows.length <= 100), 'reported in batches, not one call per row')
      db.unblock()
      await writer.close()
      t.same(await storedIds(store, 'bound-'), sorted([...ids('bound-', 0, 100), ...ids('bound-', 4100, 5000)]))
    })

    t.test('maxQueue bound while the database fails: the newest rows survive the outage', async (t) => {
      const db = new DatabaseDouble(store.requestLog)
      db.failBefore = Number.MAX_SAFE_INTEGER
      const { writer, reported } = writerWith(db, {
        maxBatch: 100,
        maxQueue: 500,
        flushIntervalMs: 1,
        retryBaseMs: 2,
        retryMaxMs: 10,
      })
      for (let i = 0; i < 2000; i++) writer.write(row(`outage-${i}`, i))
      t.equal(writer.pending, 500)
      await waitFor('three failed inserts', () => db.calls >= 3)
      t.equal(writer.pending, 500, 'failed batches stay within the bound')
      const dropped = reported.filter((r) => r.err.code === 'QUEUE_FULL').flatMap((r) => r.rows.map((x) => x.requestId))
      t.same(dropped, ids('outage-', 0, 1500))
      t.ok(reported.some((r) => r.err.code === 'FLUSH_FAILED' && !r.err.dropped))
      db.failBefore = 0
      await writer.close()
      t.same(await storedIds(store, 'outage-'), sorted(ids('outage-', 1500, 2000)))
    })

    t.test('timing: rows wait at most flushIntervalMs; a full batch goes at once', async (t) => {
      const db = new DatabaseDouble(store.requestLog)
      const timers = new FakeTimers()
      const { writer, reported } = writerWith(db, { maxBatch: 10, flushIntervalMs: 100, timers })
      writer.write(row('tick-0'))
      writer.write(row('tick-1'))
      t.same(timers.armed(), [100], 'one timer for the first queued row')
      timers.advance(99)
      t.equal(db.calls, 0)
      timers.advance(1)
      t.equal(db.calls, 1, 'flushed at flushIntervalMs')
      await settle(db)
      t.equal(writer.pending, 0)
      t.same(timers.armed(), [], 'no timer while idle')

      for (let i = 2; i < 12; i++) writer.write(row(`tick-${i}`, i))
      t.same(timers.armed(), [0], 'a full batch pulls the flush forward')
      timers.advance(0)
      t.equal(db.calls, 2)
      await settle(db)
      for (let i = 12; i < 37; i++) writer.write(row(`tick-${i}`, i))
      timers.advance(0)
      await settle(db)
      t.same(timers.armed(), [0], 'another full batch waits: next one at once, after a yield')
      timers.advance(0)
      await settle(db)
      t.same(timers.armed(), [100], 'a partial batch waits for the interval')
      t.equal(writer.pending, 5)
      timers.advance(100)
      await settle(db)
      t.equal(writer.pending, 0)
      t.same(await storedIds(store, 'tick-'), sorted(ids('tick-', 0, 37)))
      t.equal(db.maxActive, 1)
      await writer.close()
      t.same(timers.armed(), [], 'close() leaves no timer behind')
      t.same(reported.map((r) => r.err.message), [], 'nothing reported')
    })

    t.test('timing: failed inserts retry with doubling backoff up to retryMaxMs', async (t) => {
      const db = new DatabaseDouble(store.requestLog)
      const timers = new FakeTimers()
      db.failBefore = 5
      const { writer, reported } = writerWith(db, { maxBatch: 10, flushIntervalMs: 50, retryBaseMs: 100, retryMaxMs: 500, timers })
      writer.write(row('backoff-0'))
      timers.advance(50)
      const delays: number[] = []
      for (let attempt = 1; attempt <= 5; attempt++) {
        await settle(db)
        t.equal(db.calls, attempt)
        const armed = timers.armed()
        delays.push(armed[0] ?? -1)
        if (attempt === 3) {
          writer.write(row('backoff-1', 1))
          t.same(timers.armed(), armed, 'a write does not pull a retry forward')
        }
        timers.advance(armed[0] ?? 0)
      }
      await settle(db)
      t.same(delays, [100, 200, 400, 500, 500])
      t.equal(db.calls, 6)
      t.equal(writer.pending, 0)
      t.same(reported.map((r) => r.err.code), Array(5).fill('FLUSH_FAILED'))
      t.match(reported[2]?.err.message ?? '', /attempt 3\), retrying in 400 ms/)
      t.same(await storedIds(store, 'backoff-'), ['backoff-0', 'backoff-1'])
      await writer.close()
    })

    t.test('flush() writes everything pending, rejects on a failed insert and keeps its rows', async (t) => {
      const db = new DatabaseDouble(store.requestLog)
      const timers = new FakeTimers()
      const { writer, reported } = writerWith(db, { maxBatch: 10, flushIntervalMs: 1000, timers })
      for (let i = 0; i < 25; i++) writer.write(row(`flush-${i}`, i))
      await Promise.all([writer.flush(), writer.flush()])
      t.equal(writer.pending, 0)
      t.equal(db.calls, 3)
      t.equal(db.maxActive, 1, 'concurrent flush() calls share the single insert slot')
      db.failBefore = 1
      for (let i = 25; i < 30; i++) writer.write(row(`flush-${i}`, i))
      await t.rejects(writer.flush(), { name: 'RequestLogError', code: 'FLUSH_FAILED' })
      t.equal(writer.pending, 5, 'rows kept')
      t.equal(reported.length, 1)
      await writer.flush()
      t.equal(writer.pending, 0)
      t.same(await storedIds(store, 'flush-'), sorted(ids('flush-', 0, 30)))
      await writer.flush()
      t.pass('flush() with nothing pending resolves')
      await writer.close()
    })

    t.test('close() gives up after closeTimeoutMs while the database stays down', async (t) => {
      const db = new DatabaseDouble(store.requestLog)
      const timers = new FakeTimers()
      db.failBefore = Number.MAX_SAFE_INTEGER
      const { writer, reported } = writerWith(db, { maxBatch: 10, retryBaseMs: 100, retryMaxMs: 1000, closeTimeoutMs: 5000, timers })
      for (let i = 0; i < 15; i++) writer.write(row(`giveup-${i}`, i))
      let closed = false
      const closing = writer.close().then(() => {
        closed = true
      })
      while (timers.now < 4900) {
        await settle(db)
        timers.advance(50)
      }
      await settle(db)
      t.equal(closed, false, 'still retrying before the deadline')
      t.ok(db.calls >= 4, `retried ${db.calls} times`)
      timers.advance(200)
      await closing
      t.equal(writer.pending, 0)
      const last = reported.at(-1)
      t.equal(last?.err.code, 'CLOSE_TIMEOUT')
      t.equal(last?.err.dropped, true)
      t.same(last?.rows.map((r) => r.requestId), ids('giveup-', 0, 15), 'every undelivered row handed to onError')
      t.same(timers.armed(), [], 'no timer left')
    })

    t.test('malformed rows are refused at write(); a key in keyId never reaches onError', async (t) => {
      const { writer, reported } = writerWith(new DatabaseDouble(store.requestLog), { timers: new FakeTimers() })
      writer.write({ ...row('bad-1'), status: 'ok' } as unknown as RequestLogRow)
      writer.write(row('bad-2', 0, { cost: -5n }))
      const plaintext = `sk-${'A'.repeat(49)}`
      writer.write(row('bad-3', 0, { keyId: plaintext }))
      t.equal(writer.pending, 0, 'none queued, so none can poison a batch')
      t.same(reported.map((r) => r.err.code), ['INVALID_ROW', 'INVALID_ROW', 'INVALID_ROW'])
      t.ok(reported.every((r) => r.err.dropped))
      t.match(reported[2]?.err.message ?? '', /keyId holds an API key/)
      t.equal(reported[2]?.rows[0]?.keyId, null, 'redacted before it is handed on')
      t.notOk(JSON.stringify(reported.map((r) => ({ message: r.err.message, ids: r.rows.map((x) => x.keyId) }))).includes(plaintext))
      await writer.close()
    })

    t.test('an onError that throws does not break write()', async (t) => {
      const warnings: string[] = []
      const onWarning = (w: Error): void => {
        warnings.push(w.message)
      }
      process.on('warning', onWarning)
      t.teardown(() => process.off('warning', onWarning))
      const writer = new RequestLogWriter(store.requestLog, {
        timers: new FakeTimers(),
        onError: () => {
          throw new Error('reporter broke')
        },
      })
      t.doesNotThrow(() => writer.write({ ...row('throws'), totalMs: -1 }))
      await new Promise((resolve) => setImmediate(resolve))
      t.match(warnings, [/reporter broke/])
      await writer.close()
    })

    t.test('options are checked once, at construction', async (t) => {
      const onError = noop
      const make = (opts: Partial<RequestLogWriterOptions>) => () => new RequestLogWriter(store.requestLog, { onError, ...opts })
      t.throws(make({ maxBatch: 0 }), RangeError)
      t.throws(make({ maxBatch: 1.5 }), RangeError)
      t.throws(make({ maxBatch: 10, maxQueue: 9 }), RangeError, 'maxQueue below maxBatch')
      t.throws(make({ flushIntervalMs: -1 }), RangeError)
      t.throws(make({ flushIntervalMs: Number.POSITIVE_INFINITY }), RangeError)
      t.throws(make({ retryBaseMs: 100, retryMaxMs: 50 }), RangeError)
      t.throws(make({ closeTimeoutMs: Number.NaN }), RangeError)
      t.throws(() => new RequestLogWriter(store.requestLog, {} as RequestLogWriterOptions), TypeError)
      t.doesNotThrow(make({}))
    })
  })
}
