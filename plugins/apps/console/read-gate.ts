// The console's heavy reads (the request log, the ledger, the usage summary) bounded per account
// on each instance: one read of a route in flight per account, the rows of request-log and
// ledger pages a minute (a page counts the rows it asked for), and a few usage summaries a
// minute. Measured before this bound (8 loops from another process, one account holding 10,000
// request-log rows): `GET /usage?days=90` took another client's model-call p50 from 15 ms to
// 5.3 s on SQLite (580 ms on PostgreSQL), `GET /requests?limit=1000` to 730 ms (SQLite reads
// run on the event loop, so one read in flight alone bounds nothing
// there). In process, not in the store: it guards this instance's CPU, and a store write per
// read would cost more than it saves.
import { LRUCache } from 'lru-cache'
import { gatewayError } from '../../foundation/errors/index.js'

/** Reads of one route that one account may have running on one instance. */
export const READS_IN_FLIGHT_PER_ROUTE = 1
/** `GET /usage` summaries (up to 10,000 rows each) one account may ask one instance for per minute. */
export const USAGE_PER_MINUTE = 10
/** Rows of `GET /requests` and `GET /ledger` pages (the `limit` asked) per account per instance per minute. */
export const PAGE_ROWS_PER_MINUTE = 20_000
const MINUTE_MS = 60_000

interface AccountReads { inFlight: Map<string, number>, windowEndsAt: number, summaries: number, rows: number }

/** What a read spends: a usage summary, or a page of `rows` rows. */
export type ReadCost = { summary: true } | { rows: number }

export class ReadGate {
  // Bounded like the other per-instance tables (the admin throttle, the key cache): maxSize at
  // one unit an entry, not max, which preallocates its 100,000 slots at every boot and reload
  // (a tenth of a test gateway's boot on the CI machine; see LocalLimits).
  private readonly accounts = new LRUCache<string, AccountReads>({ maxSize: 100_000, sizeCalculation: () => 1 })

  constructor (private readonly now: () => Date) {}

  /**
   * Runs `read` for the account unless a read of `route` is already running for it (429,
   * Retry-After 1) or the minute's budget of its kind is spent (429, the rest of the minute); the
   * cost is spent before the read.
   */
  async run<T> (accountId: string, route: string, cost: ReadCost, read: () => Promise<T>): Promise<T> {
    const now = this.now().getTime()
    let reads = this.accounts.get(accountId)
    if (reads === undefined) {
      reads = { inFlight: new Map(), windowEndsAt: 0, summaries: 0, rows: 0 }
      this.accounts.set(accountId, reads)
    }
    const running = reads.inFlight.get(route) ?? 0
    if (running >= READS_IN_FLIGHT_PER_ROUTE) {
      throw gatewayError('LIMIT_RATE_EXCEEDED', { retryAfterSeconds: 1, detail: 'This account already has this read running; wait for it.' })
    }
    if (now >= reads.windowEndsAt) {
      reads.windowEndsAt = now + MINUTE_MS
      reads.summaries = 0
      reads.rows = 0
    }
    const over = 'summary' in cost ? reads.summaries + 1 > USAGE_PER_MINUTE : reads.rows + cost.rows > PAGE_ROWS_PER_MINUTE
    if (over) {
      throw gatewayError('LIMIT_RATE_EXCEEDED', {
        retryAfterSeconds: Math.max(1, Math.ceil((reads.windowEndsAt - now) / 1000)),
        detail: 'summary' in cost ? `At most ${USAGE_PER_MINUTE} usage summaries a minute.` : `At most ${PAGE_ROWS_PER_MINUTE} rows of pages a minute; ask for smaller pages or wait.`
      })
    }
    if ('summary' in cost) reads.summaries++
    else reads.rows += cost.rows
    reads.inFlight.set(route, running + 1)
    try {
      return await read()
    } finally {
      const left = (reads.inFlight.get(route) ?? 1) - 1
      if (left > 0) reads.inFlight.set(route, left)
      else reads.inFlight.delete(route)
    }
  }
}
