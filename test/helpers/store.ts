// Test support shared by every store contract test (ours and later ledger, jobs…):
// the same assertions run against a temporary SQLite directory and a private
// PostgreSQL schema that is dropped afterwards. No test-runner dependency.
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import type { Clock } from '../../plugins/foundation/store/clock.js'
import type { StoreContext } from '../../plugins/foundation/store/context.js'
import { type OpenStoreOptions, openStore, randomIds } from '../../plugins/foundation/store/index.js'
import type { Account, Store } from '../../plugins/foundation/store/types.js'

export const TEST_DATABASE_URL = process.env['TEST_DATABASE_URL'] ?? 'postgres://postgres@127.0.0.1:5432/test'
export const TEST_SECRET = 'test-secret-0123456789-abcdefghijklmnop'

/** The context a store part is built with outside openStore (a ledger or account store on its own connection), on `clock`. */
export const storeContext = (clock: Clock): StoreContext =>
  ({ clock, ids: randomIds, random: randomBytes, secret: TEST_SECRET, defaultTier: 'free', publish: async () => {} })

export interface TestBackend {
  readonly name: 'sqlite' | 'pg'
  /** SQLite directory or PostgreSQL schema; the same one on every open(). */
  readonly location: string
  /** Opens a store on this backend's database; closed by cleanup(). */
  open(opts?: Partial<OpenStoreOptions>): Promise<Store>
  /** Closes every store opened here, then removes the directory or drops the schema. */
  cleanup(): Promise<void>
}

/** A clock the test moves by hand. */
export class ManualClock implements Clock {
  private ms: number
  constructor (start: Date | string = '2030-01-01T00:00:00.000Z') {
    this.ms = new Date(start).getTime()
  }

  now (): Date {
    return new Date(this.ms)
  }

  advance (ms: number): void {
    this.ms += ms
  }
}

export function randomSchemaName (): string {
  return `t_${randomBytes(8).toString('hex')}`
}

export function sqliteTestBackend (): TestBackend {
  const dir = mkdtempSync(join(tmpdir(), 'gateway-store-'))
  const stores: Store[] = []
  return {
    name: 'sqlite',
    location: dir,
    async open (opts = {}) {
      const store = await openStore({ secret: TEST_SECRET, ...opts, dataDir: dir })
      stores.push(store)
      return store
    },
    async cleanup () {
      await Promise.all(stores.map((s) => s.close()))
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

/** Drops a PostgreSQL schema a test or benchmark created, with everything in it. */
export async function dropSchema (schema: string, databaseUrl: string = TEST_DATABASE_URL): Promise<void> {
  const client = new pg.Client({ connectionString: databaseUrl })
  await client.connect()
  try {
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
  } finally {
    await client.end()
  }
}

export function pgTestBackend (): TestBackend {
  const schema = randomSchemaName()
  const stores: Store[] = []
  return {
    name: 'pg',
    location: schema,
    async open (opts = {}) {
      const store = await openStore({ secret: TEST_SECRET, ...opts, databaseUrl: TEST_DATABASE_URL, schema })
      stores.push(store)
      return store
    },
    async cleanup () {
      await Promise.all(stores.map((s) => s.close()))
      await dropSchema(schema)
    },
  }
}

/** One fresh backend of each kind, for `for (const b of testBackends())` loops. */
export function testBackends (): TestBackend[] {
  return [sqliteTestBackend(), pgTestBackend()]
}

/** Every row of every table of the backend, for "nothing secret is stored" checks. */
export async function dumpAllTables (store: Store): Promise<Record<string, unknown[]>> {
  const out: Record<string, unknown[]> = {}
  if (store.backend.kind === 'sqlite') {
    const { db } = store.backend
    const tables = db
      .prepare<[], { name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
      .all()
    for (const { name } of tables) out[name] = db.prepare(`SELECT * FROM "${name}"`).all()
    return out
  }
  const { pool } = store.backend
  const { rows } = await pool.query<{ table_name: string }>(
    "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'"
  )
  for (const { table_name: table } of rows) out[table] = (await pool.query(`SELECT * FROM "${table}"`)).rows
  return out
}

/**
 * An account with one key, credited `credit` nano-units and marked topped up (neither when
 * `credit` is 0): what a test calls the gateway with.
 */
export async function seedFundedKey (store: Store, names: { account: string, key: string, tier?: string }, credit: bigint): Promise<{ account: Account, key: string }> {
  const account = await store.accounts.create({ name: names.account, ...(names.tier === undefined ? {} : { tier: names.tier }) })
  const created = await store.keys.create({ accountId: account.id, name: names.key })
  if (!created.ok) throw new Error(`seeding the key failed: ${created.error}`)
  if (credit > 0n) {
    await store.ledger.credit({ accountId: account.id, amount: credit, kind: 'topup', postingId: `seed:${account.id}` })
    await store.accounts.markToppedUp(account.id)
  }
  return { account, key: created.value.plaintext }
}
