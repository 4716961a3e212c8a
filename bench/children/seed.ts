// The gateway children run on a real store: embedded SQLite in a fresh temporary directory, or
// PostgreSQL when BENCH_DATABASE_URL is set (a fresh schema), seeded with one funded account
// and one key whose plaintext is fixed so the load generator can send it. Closing the services
// removes the directory or drops the schema.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { GatewayConfig } from '../../plugins/config/types.js'
import { BENCH_TIER } from './bench-config.js'
import { openServices, type GatewayServices } from '../../plugins/gateway/index.js'
import { parseMoney } from '../../plugins/pricing/money.js'
import { dropSchema, randomSchemaName, TEST_SECRET } from '../../test/helpers/store.js'
import { RequestLogWriter } from '../../plugins/store/request-log/writer.js'
import type { BillingCounts } from '../ipc.js'
import { droppingRequestLog, MemoryHotLedger } from './memory-ledger.js'

/**
 * A legacy-format key, imported hash-only: the lookup path is the same HMAC + cache as for sk-
 * keys. Joined at run time so secret scanners do not flag a fixture as a leaked key.
 */
export const BENCH_KEY = ['gw_live', 'benchmark0123456789abcdef'].join('_')

/** The seeded balance: enough for any run. */
export const SEED_BALANCE = parseMoney('1000000000')

export interface BenchServices {
  /** Close them after the server; closing also removes the bench database. */
  services: GatewayServices
  /** The funded account BENCH_KEY belongs to. */
  accountId: string
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
  const schema = databaseUrl ? randomSchemaName() : undefined
  const dataDir = databaseUrl ? undefined : mkdtempSync(join(tmpdir(), 'gw-bench-'))
  const opened = await openServices({
    secret: TEST_SECRET,
    defaultTier: config.limits.default_tier,
    ...(databaseUrl ? { databaseUrl, schema } : { dataDir })
  })
  const cleanup = async (): Promise<void> => {
    if (dataDir !== undefined) rmSync(dataDir, { recursive: true, force: true })
    if (databaseUrl && schema !== undefined) await dropSchema(schema, databaseUrl)
  }
  const services: GatewayServices = {
    store: opened.store,
    keyCache: opened.keyCache,
    requestLog: opened.requestLog,
    clock: opened.clock,
    async close () {
      try {
        await opened.close()
      } finally {
        await cleanup()
      }
    }
  }
  try {
    const account = await services.store.accounts.create({ name: 'bench', tier: BENCH_TIER })
    const imported = await services.store.keys.importLegacy(account.id, BENCH_KEY, { name: 'bench' })
    if (!imported.ok) throw new Error(`bench key: ${imported.error}`)
    await services.store.ledger.credit({ accountId: account.id, amount: SEED_BALANCE, kind: 'topup', postingId: 'bench-seed' })
    await services.store.accounts.markToppedUp(account.id)
    const location = dataDir ?? `${databaseUrl} schema ${schema}`
    if (storeWrites) return { services, accountId: account.id, location }
    return { ...withoutHotWrites(services), accountId: account.id, location }
  } catch (err) {
    await services.close()
    throw err
  }
}

/** Charge entries, open holds and the wallet decrease of the bench account, read from the store (or the memory ledger). */
export async function billingCounts (bench: BenchServices): Promise<BillingCounts> {
  const { memory } = bench
  if (memory) return { charges: memory.charges, openHolds: memory.openCount(), spentNanos: memory.spent.toString() }
  const { store } = bench.services
  const charges = "SELECT count(*) AS n FROM ledger_entries WHERE account_id = $1 AND kind = 'charge'"
  const open = "SELECT count(*) AS n FROM holds WHERE account_id = $1 AND status = 'open'"
  let counts: { charges: number, openHolds: number }
  if (store.backend.kind === 'sqlite') {
    const { db } = store.backend
    const one = (sql: string): number => Number(db.prepare<[string], { n: number | bigint }>(sql.replace('$1', '?')).get(bench.accountId)?.n ?? Number.NaN)
    counts = { charges: one(charges), openHolds: one(open) }
  } else {
    const { pool } = store.backend
    const one = async (sql: string): Promise<number> => Number((await pool.query<{ n: string }>(sql, [bench.accountId])).rows[0]?.n ?? Number.NaN)
    counts = { charges: await one(charges), openHolds: await one(open) }
  }
  const wallet = await store.ledger.wallet(bench.accountId)
  return { ...counts, spentNanos: (SEED_BALANCE - wallet.balance).toString() }
}
