// The gateway children run on a real store: embedded SQLite in a fresh temporary directory, or
// PostgreSQL when BENCH_DATABASE_URL is set (a fresh schema), seeded with funded accounts
// (BENCH_ACCOUNTS, default 1), each with one key whose plaintext is fixed (benchKey(i)) so the
// load generator can send it. Closing the services removes the directory or drops the schema.
// With BENCH_REDIS_URL the limits and the key cache's invalidation go through Redis, as with
// REDIS_URL in production (keys and channel under BENCH_REDIS_PREFIX, default one per schema).
// BENCH_PG_SCHEMA=<schema> with BENCH_SEED=join opens a schema another child seeded (the
// second of two instances on one database): it seeds nothing and drops nothing.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Redis } from 'ioredis'
import type { GatewayConfig } from '../../plugins/foundation/config/types.js'
import { BENCH_TIER } from './bench-config.js'
import { openServices, type GatewayServices } from '../../plugins/apps/gateway/index.js'
import { parseMoney } from '../../plugins/foundation/pricing/money.js'
import { dropSchema, randomSchemaName, TEST_SECRET } from '../../test/helpers/store.js'
import { RequestLogWriter } from '../../plugins/foundation/store/request-log/writer.js'
import type { BillingCounts } from '../ipc.js'
import { droppingRequestLog, MemoryHotLedger } from './memory-ledger.js'

/**
 * A legacy-format key, imported hash-only: the lookup path is the same HMAC + cache as for sk-
 * keys. Joined at run time so secret scanners do not flag a fixture as a leaked key.
 */
export const BENCH_KEY = ['gw_live', 'benchmark0123456789abcdef'].join('_')

/** The key of the i-th seeded account (0: BENCH_KEY). */
export function benchKey (i: number): string {
  return i === 0 ? BENCH_KEY : `${BENCH_KEY}-${i}`
}

/** Accounts to seed: BENCH_ACCOUNTS, default 1. */
export function benchAccounts (env: NodeJS.ProcessEnv = process.env): number {
  const n = Number(env.BENCH_ACCOUNTS ?? 1)
  if (!Number.isInteger(n) || n < 1) throw new Error(`BENCH_ACCOUNTS must be a positive integer, not ${env.BENCH_ACCOUNTS}`)
  return n
}

/** The seeded balance: enough for any run. */
export const SEED_BALANCE = parseMoney('1000000000')

export interface BenchServices {
  /** Close them after the server; closing also removes the bench database. */
  services: GatewayServices
  /** The funded accounts, in key order: benchKey(i) belongs to accountIds[i]. */
  accountIds: string[]
  /** Where the store lives: the SQLite directory or the PostgreSQL schema. */
  location: string
  /** Set when the hot path's storage writes are off (the gateway-nostore bound): its ledger. */
  memory?: MemoryHotLedger
}

/**
 * The same services with holds, settles and request log inserts kept in memory (see
 * memory-ledger.ts); everything else, and close, as before.
 */
function withoutHotWrites (services: GatewayServices): { services: GatewayServices, memory: MemoryHotLedger } {
  const memory = new MemoryHotLedger(services.store.ledger)
  const requestLog = new RequestLogWriter(droppingRequestLog(services.store.requestLog), {
    onError: (err, rows) => process.emitWarning(`request log: ${err.message} (${rows.length} rows)`)
  })
  return {
    memory,
    services: {
      ...services,
      store: { ...services.store, ledger: memory },
      requestLog,
      async close () {
        try {
          await requestLog.close()
        } finally {
          await services.close()
        }
      }
    }
  }
}

/** `storeWrites: false` keeps holds, settles and request log rows in memory (gateway-nostore). */
export async function openBenchServices (config: GatewayConfig, { storeWrites = true }: { storeWrites?: boolean } = {}): Promise<BenchServices> {
  const databaseUrl = process.env.BENCH_DATABASE_URL
  const joining = process.env.BENCH_SEED === 'join'
  if (joining && (!databaseUrl || !process.env.BENCH_PG_SCHEMA)) throw new Error('BENCH_SEED=join needs BENCH_DATABASE_URL and BENCH_PG_SCHEMA')
  const schema = databaseUrl ? process.env.BENCH_PG_SCHEMA || randomSchemaName() : undefined
  const dataDir = databaseUrl ? undefined : mkdtempSync(join(tmpdir(), 'gw-bench-'))
  const redisUrl = process.env.BENCH_REDIS_URL || undefined
  const redisPrefix = process.env.BENCH_REDIS_PREFIX || `gw-bench:${schema ?? 'embedded'}:`
  const opened = await openServices({
    secret: TEST_SECRET,
    defaultTier: config.limits.default_tier,
    ...(databaseUrl ? { databaseUrl, schema } : { dataDir }),
    ...(redisUrl ? { redisUrl, redisPrefix, channel: `${redisPrefix}keys`, limitsRedisTimeoutMs: config.limits.redis_timeout_ms } : {})
  })
  const cleanup = async (): Promise<void> => {
    if (dataDir !== undefined) rmSync(dataDir, { recursive: true, force: true })
    if (databaseUrl && schema !== undefined && !joining) await dropSchema(schema, databaseUrl)
    if (redisUrl && !joining) await dropRedisKeys(redisUrl, redisPrefix)
  }
  const services: GatewayServices = {
    store: opened.store,
    keyCache: opened.keyCache,
    requestLog: opened.requestLog,
    clock: opened.clock,
    ...(opened.limitsRedis ? { limitsRedis: opened.limitsRedis } : {}),
    async close () {
      try {
        await opened.close()
      } finally {
        await cleanup()
      }
    }
  }
  try {
    const accountIds = joining ? await seededAccounts(services) : await seed(services, benchAccounts())
    const location = dataDir ?? `${databaseUrl} schema ${schema}`
    if (storeWrites) return { services, accountIds, location }
    return { ...withoutHotWrites(services), accountIds, location }
  } catch (err) {
    await services.close()
    throw err
  }
}

/** Creates `n` funded accounts, the i-th with benchKey(i); answers their ids in key order. */
async function seed (services: GatewayServices, n: number): Promise<string[]> {
  const ids: string[] = []
  for (let i = 0; i < n; i++) {
    const account = await services.store.accounts.create({ name: `bench-${String(i).padStart(4, '0')}`, tier: BENCH_TIER })
    const imported = await services.store.keys.importLegacy(account.id, benchKey(i), { name: 'bench' })
    if (!imported.ok) throw new Error(`bench key: ${imported.error}`)
    await services.store.ledger.credit({ accountId: account.id, amount: SEED_BALANCE, kind: 'topup', postingId: `bench-seed-${i}` })
    await services.store.accounts.markToppedUp(account.id)
    ids.push(account.id)
  }
  return ids
}

/** The accounts another child seeded in this schema, in key order. */
async function seededAccounts (services: GatewayServices): Promise<string[]> {
  const { backend } = services.store
  if (backend.kind !== 'pg') throw new Error('joining a seeded store needs PostgreSQL')
  const { rows } = await backend.pool.query<{ id: string }>("SELECT id FROM accounts WHERE name LIKE 'bench-%' ORDER BY name")
  if (rows.length === 0) throw new Error('BENCH_SEED=join: the schema has no bench accounts')
  return rows.map((r) => r.id)
}

/** Removes the Redis keys of one bench run (limits counters and leases under `prefix`). */
async function dropRedisKeys (url: string, prefix: string): Promise<void> {
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 })
  try {
    await redis.connect()
    let cursor = '0'
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000)
      if (keys.length > 0) await redis.del(...keys)
      cursor = next
    } while (cursor !== '0')
  } finally {
    redis.disconnect()
  }
}

/** Charge entries, open holds and the wallet decrease of the bench accounts, read from the store (or the memory ledger). */
export async function billingCounts (bench: BenchServices): Promise<BillingCounts> {
  const { memory } = bench
  if (memory) return { charges: memory.charges, openHolds: memory.openCount(), spentNanos: memory.spent.toString() }
  const { store } = bench.services
  const ids = bench.accountIds
  const charges = "SELECT count(*) AS n FROM ledger_entries WHERE kind = 'charge' AND account_id IN "
  const open = "SELECT count(*) AS n FROM holds WHERE status = 'open' AND account_id IN "
  // Summed here: 100 seeded balances overflow SQLite's 64-bit SUM.
  const balances = 'SELECT balance AS n FROM wallets WHERE account_id IN '
  let counts: { charges: number, openHolds: number, balances: bigint[] }
  if (store.backend.kind === 'sqlite') {
    const { db } = store.backend
    const list = `(${ids.map(() => '?').join(', ')})`
    const all = (sql: string): bigint[] => db.prepare<string[], { n: bigint }>(sql + list).safeIntegers(true).all(...ids).map((r) => r.n)
    counts = { charges: Number(all(charges)[0] ?? -1), openHolds: Number(all(open)[0] ?? -1), balances: all(balances) }
  } else {
    const { pool } = store.backend
    const all = async (sql: string): Promise<bigint[]> => (await pool.query<{ n: string }>(sql + '(SELECT unnest($1::text[]))', [ids])).rows.map((r) => BigInt(r.n))
    counts = { charges: Number((await all(charges))[0] ?? -1), openHolds: Number((await all(open))[0] ?? -1), balances: await all(balances) }
  }
  const left = counts.balances.reduce((a, b) => a + b, 0n)
  return { charges: counts.charges, openHolds: counts.openHolds, spentNanos: (SEED_BALANCE * BigInt(ids.length) - left).toString() }
}
