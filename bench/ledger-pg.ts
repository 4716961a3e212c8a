// Hold + settle throughput on PostgreSQL with durable commits (synchronous_commit = on).
//   npx tsx bench/ledger-pg.ts            (DATABASE_URL or TEST_DATABASE_URL, else local `test`)
//   BENCH_SECONDS=5 BENCH_ROUNDS=3 BENCH_WORKERS=20,100 BENCH_UPSTREAM_MS=0 BENCH_ONLY='group commit' BENCH_INSTANCES=1,2 npx tsx bench/ledger-pg.ts
// Each worker loops: hold the worst case, then settle part of it. Scenarios: one hot wallet,
// and 100 wallets picked at random. BENCH_INSTANCES=K splits the workers over K ledgers, each
// with its own pool and its own group-commit queues, on the same schema: K gateway instances'
// ledgers on one database (in one process, so their JavaScript shares a core). Implementations: the naive two-transaction pattern
// (reference), the ledger's statements one call per statement, and the group-committed ledger.
import pg from 'pg'
import type { Pool } from 'pg'
import { randomIds, systemClock } from '../plugins/foundation/store/clock.js'
import type { StoreContext } from '../plugins/foundation/store/context.js'
import { openStore } from '../plugins/foundation/store/index.js'
import { inTransaction } from '../plugins/foundation/store/pg/transaction.js'
import type { Store } from '../plugins/foundation/store/index.js'
import { type GroupCommitOptions, createPgLedgerStore } from '../plugins/foundation/store/ledger/index.js'
import type { LedgerStore } from '../plugins/foundation/store/ledger/index.js'
import { TEST_SECRET, randomSchemaName } from '../test/helpers/store.js'

const DATABASE_URL = process.env['DATABASE_URL'] ?? process.env['TEST_DATABASE_URL'] ?? 'postgres://postgres@127.0.0.1:5432/test'
const SECONDS = Number(process.env['BENCH_SECONDS'] ?? 5)
const WORKERS = (process.env['BENCH_WORKERS'] ?? '20').split(',').map(Number)
const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 3)
const INSTANCES = (process.env['BENCH_INSTANCES'] ?? '1').split(',').map(Number)
/** Simulated upstream time between hold and settle: uniform in 0..BENCH_UPSTREAM_MS. */
const UPSTREAM_MS = Number(process.env['BENCH_UPSTREAM_MS'] ?? 0)
const WARMUP_MS = 500
const POOL = 20
const HOLD = 1_000_000n
const COST = 400_000n
const FUNDS = 10n ** 17n

const ctx: StoreContext = {
  clock: systemClock,
  ids: randomIds,
  random: () => Buffer.alloc(0),
  secret: TEST_SECRET,
  defaultTier: 'free',
  publish: async () => {},
}

/** One request's money path; answers false when the hold was refused. */
type Request = (accountId: string, requestId: string) => Promise<boolean>

/** The upstream call between hold and settle; none by default (workers then move in lockstep). */
const upstream = (): Promise<void> | undefined =>
  UPSTREAM_MS > 0 ? new Promise((resolve) => setTimeout(resolve, Math.random() * UPSTREAM_MS)) : undefined

interface Impl {
  name: string
  make(pool: Pool): { request: Request; batches?: () => string; close(): Promise<void> }
}

/** The plain pattern: a hold transaction, then a post transaction, each its own commit. */
function naive (pool: Pool): Request {
  return async (accountId, requestId) => {
    const holdId = randomIds('hold')
    const held = await inTransaction(pool, async (client) => {
      const now = new Date()
      const reserved = await client.query(
        'UPDATE wallets SET held = held + $1, updated_at = $3 WHERE account_id = $2 AND balance - held - $1 >= 0 RETURNING 1',
        [HOLD.toString(), accountId, now]
      )
      if (reserved.rowCount === 0) return false
      await client.query(
        `INSERT INTO holds (id, account_id, amount, status, request_id, expires_at, created_at)
         VALUES ($1, $2, $3, 'open', $4, $5, $6)`,
        [holdId, accountId, HOLD.toString(), requestId, new Date(now.getTime() + 600_000), now]
      )
      return true
    })
    if (!held) return false
    await upstream()
    await inTransaction(pool, async (client) => {
      const posted = await client.query(
        `UPDATE holds SET status = 'posted', posted_amount = LEAST($2::int8, amount), settled_at = $3
         WHERE id = $1 AND status = 'open' RETURNING amount`,
        [holdId, COST.toString(), new Date()]
      )
      if (posted.rowCount !== 1) return
      await client.query(
        `INSERT INTO ledger_entries (id, account_id, amount, kind, posting_id, hold_id, request_id, created_at)
         VALUES ($1, $2, $3, 'charge', $4, $5, $6, $7)`,
        [randomIds('entry'), accountId, (-COST).toString(), `post:${holdId}`, holdId, requestId, new Date()]
      )
      await client.query('UPDATE wallets SET held = held - $1, balance = balance - $2 WHERE account_id = $3', [
        HOLD.toString(),
        COST.toString(),
        accountId,
      ])
    })
    return true
  }
}

function viaLedger (ledger: LedgerStore): Request {
  return async (accountId, requestId) => {
    const h = await ledger.hold({ accountId, amount: HOLD, floor: 0n, requestId, ttlMs: 600_000 })
    if (!h.ok) return false
    await upstream()
    await ledger.settle({ holdId: h.holdId, amount: COST, requestId })
    return true
  }
}

function batched (name: string, batch: Omit<GroupCommitOptions, 'onBatch'>): Impl {
  return {
    name,
    make (pool) {
      const sizes = { hold: { items: 0, batches: 0 }, settle: { items: 0, batches: 0 } }
      const observe = (kind: 'hold' | 'settle') => (size: number) => {
        sizes[kind].items += size
        sizes[kind].batches += 1
      }
      const ledger = createPgLedgerStore(pool, ctx, {
        holds: { ...batch, onBatch: observe('hold') },
        settles: { ...batch, onBatch: observe('settle') },
      })
      const avg = ({ items, batches }: { items: number; batches: number }) => (items / Math.max(1, batches)).toFixed(1)
      return {
        request: viaLedger(ledger),
        batches: () => `avg batch: hold ${avg(sizes.hold)}, settle ${avg(sizes.settle)}`,
        close: () => ledger.close(),
      }
    },
  }
}

const ALL_IMPLS: Impl[] = [
  { name: 'naive: 2 transactions/request', make: (pool) => ({ request: naive(pool), close: async () => {} }) },
  batched('ledger, unbatched (1 statement/call, 20 in flight)', { maxBatch: 1, maxInFlight: POOL }),
  batched('ledger, group commit, 1 in flight/kind', { maxBatch: 1000, maxInFlight: 1 }),
  batched('ledger, group commit, 2 in flight/kind', { maxBatch: 1000, maxInFlight: 2 }),
  batched('ledger, group commit, 4 in flight/kind', { maxBatch: 1000, maxInFlight: 4 }),
]

/** BENCH_ONLY=substring keeps the implementations whose name contains it. */
const IMPLS = ALL_IMPLS.filter((impl) => impl.name.includes(process.env['BENCH_ONLY'] ?? ''))

async function fundedAccounts (store: Store, n: number): Promise<string[]> {
  const ids: string[] = []
  for (let i = 0; i < n; i++) {
    const { id } = await store.accounts.create({ name: `bench-${i}` })
    await store.ledger.credit({ accountId: id, amount: FUNDS, kind: 'topup', postingId: `bench-fund-${id}` })
    ids.push(id)
  }
  return ids
}

/** balance == Σ entries and held == 0 on every wallet, after the run drained. */
async function verify (pool: Pool, accounts: string[]): Promise<void> {
  const { rows } = await pool.query<{ bad: string }>(
    `SELECT count(*) FILTER (WHERE w.balance <> e.total OR w.held <> 0)::text AS bad
     FROM wallets w JOIN (SELECT account_id, SUM(amount) AS total FROM ledger_entries GROUP BY account_id) e USING (account_id)
     WHERE w.account_id = ANY($1)`,
    [accounts]
  )
  const bad = rows[0]?.bad ?? '?'
  if (bad !== '0') throw new Error(`${bad} wallets disagree with their entries`)
}

interface RunResult {
  rate: number
  requests: number
  refused: number
  batches: string
}

async function run (impl: Impl, pools: Pool[], accounts: string[], workers: number): Promise<RunResult> {
  const all = pools.map((p) => impl.make(p))
  const made = all[0]!
  let requests = 0
  let refused = 0
  const started = performance.now()
  const warmupEnd = started + WARMUP_MS
  const deadline = warmupEnd + SECONDS * 1000
  let counted = 0
  await Promise.all(
    Array.from({ length: workers }, async (_, w) => {
      for (let i = 0; performance.now() < deadline; i++) {
        const account = accounts[Math.floor(Math.random() * accounts.length)] as string
        const ok = await all[w % all.length]!.request(account, `w${w}-${i}`)
        if (!ok) refused++
        requests++
        if (performance.now() > warmupEnd) counted++
      }
    })
  )
  const elapsed = (performance.now() - warmupEnd) / 1000
  await Promise.all(all.map((m) => m.close()))
  await verify(pools[0]!, accounts)
  return { rate: counted / elapsed, requests, refused, batches: made.batches?.() ?? '' }
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b)
  const mid = Math.floor(s.length / 2)
  return s.length % 2 ? (s[mid] ?? 0) : ((s[mid - 1] ?? 0) + (s[mid] ?? 0)) / 2
}

async function main (): Promise<void> {
  const schema = randomSchemaName()
  const store = await openStore({ databaseUrl: DATABASE_URL, schema, secret: TEST_SECRET, poolMax: POOL })
  // The other instances' stores, on the same schema (opened after the first migrated it).
  const others: Store[] = []
  for (let k = 1; k < Math.max(...INSTANCES); k++) others.push(await openStore({ databaseUrl: DATABASE_URL, schema, secret: TEST_SECRET, poolMax: POOL }))
  const admin = new pg.Client({ connectionString: DATABASE_URL })
  await admin.connect()
  try {
    const settings = await admin.query<{ name: string; setting: string }>(
      "SELECT name, setting FROM pg_settings WHERE name IN ('synchronous_commit', 'fsync', 'commit_delay', 'wal_sync_method') ORDER BY name"
    )
    console.log(`PostgreSQL ${(await admin.query<{ v: string }>("SELECT current_setting('server_version') AS v")).rows[0]?.v}:`, settings.rows.map((r) => `${r.name}=${r.setting}`).join(' '))
    console.log(
      `${SECONDS} s per run after ${WARMUP_MS} ms warm-up, pool ${POOL}, hold ${HOLD} then settle ${COST} per request` +
        `${UPSTREAM_MS > 0 ? `, upstream 0–${UPSTREAM_MS} ms between them` : ''}\n`
    )
    const pools = [store, ...others].map((st) => {
      if (st.backend.kind !== 'pg') throw new Error('expected PostgreSQL')
      return st.backend.pool
    })
    const scenarios: Array<[string, number]> = [
      ['one hot wallet', 1],
      ['100 wallets', 100],
    ]
    for (const workers of WORKERS) {
      for (const instances of INSTANCES) {
        for (const [label, n] of scenarios) {
          console.log(`${label}, ${workers} concurrent workers${instances > 1 ? ` over ${instances} ledger instances` : ''} (median of ${ROUNDS} rounds, min–max):`)
          const results = new Map<Impl, RunResult[]>(IMPLS.map((impl) => [impl, []]))
          for (let round = 0; round < ROUNDS; round++) {
          // Rotated order and fresh wallets each round, so load from elsewhere and table
          // growth fall on every implementation alike.
            for (let k = 0; k < IMPLS.length; k++) {
              const impl = IMPLS[(k + round) % IMPLS.length] as Impl
              results.get(impl)?.push(await run(impl, pools.slice(0, instances), await fundedAccounts(store, n), workers))
            }
          }
          for (const [impl, runs] of results) {
            const rates = runs.map((r) => r.rate)
            const refused = runs.reduce((sum, r) => sum + r.refused, 0)
            console.log(
            `  ${impl.name.padEnd(50)} ${median(rates).toFixed(0).padStart(6)} req/s  ` +
              `(${Math.min(...rates).toFixed(0)}–${Math.max(...rates).toFixed(0)}; ledger exact${refused ? `, ${refused} refused` : ''}` +
              `${runs.at(-1)?.batches ? `; ${runs.at(-1)?.batches}` : ''})`
            )
          }
          console.log('')
        }
      }
    }
  } finally {
    for (const st of others) await st.close()
    await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
    await admin.end()
    await store.close()
  }
}

await main()
