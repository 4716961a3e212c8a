// Migrations: applied at open, idempotent, generic, safe under concurrent PG starts.
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import pg from 'pg'
import t from 'tap'
import { openStore } from '../plugins/foundation/store/index.js'
import type { Migration, Store } from '../plugins/foundation/store/index.js'
import { MigrationError, migrationChecksum, pendingMigrations } from '../plugins/foundation/store/migrate.js'
import { pgMigrations } from '../plugins/foundation/store/migrations/pg/index.js'
import { sqliteMigrations } from '../plugins/foundation/store/migrations/sqlite/index.js'
import { runPgMigrations } from '../plugins/foundation/store/pg/pg-migrate.js'
import { runSqliteMigrations } from '../plugins/foundation/store/sqlite/sqlite-migrate.js'
import { ManualClock, TEST_DATABASE_URL, TEST_SECRET, randomSchemaName, testBackends } from './helpers/store.js'

async function appliedVersions (store: Store): Promise<Array<{ version: number; name: string; checksum: string }>> {
  const sql = 'SELECT version, name, checksum FROM schema_migrations ORDER BY version'
  if (store.backend.kind === 'sqlite') {
    return store.backend.db
      .prepare<[], { version: bigint; name: string; checksum: string }>(sql)
      .all()
      .map((r) => ({ ...r, version: Number(r.version) }))
  }
  return (await store.backend.pool.query<{ version: number; name: string; checksum: string }>(sql)).rows
}

async function exec (store: Store, sql: string): Promise<void> {
  if (store.backend.kind === 'sqlite') store.backend.db.exec(sql)
  else await store.backend.pool.query(sql)
}

t.test('pendingMigrations', async (t) => {
  const m1: Migration = { version: 1, name: 'one', sql: 'CREATE TABLE a (x INT)' }
  const m2: Migration = { version: 2, name: 'two', sql: 'CREATE TABLE b (x INT)' }
  const applied = (m: Migration) => ({ version: m.version, name: m.name, checksum: migrationChecksum(m) })
  t.same(pendingMigrations([m1, m2], []), [m1, m2])
  t.same(pendingMigrations([m1, m2], [applied(m1)]), [m2])
  t.same(pendingMigrations([m1], [applied(m1), applied(m2)]), [], 'newer versions from a newer instance are ignored')
  t.throws(() => pendingMigrations([m2, m1], []), MigrationError, 'out of order')
  t.throws(() => pendingMigrations([m1, { ...m1, name: 'dup' }], []), MigrationError, 'duplicate version')
  t.throws(() => pendingMigrations([{ ...m1, sql: 'CREATE TABLE a (y INT)' }], [applied(m1)]), {
    name: 'MigrationError',
    message: /must not be edited/,
  })
  t.equal(migrationChecksum({ ...m1, sql: `\n${m1.sql}\n` }), migrationChecksum(m1), 'surrounding whitespace ignored')
})

t.test('both backends ship the same migration versions', async (t) => {
  t.same(
    sqliteMigrations.map((m) => [m.version, m.name]),
    pgMigrations.map((m) => [m.version, m.name])
  )
})

for (const backend of testBackends()) {
  const expected = (backend.name === 'sqlite' ? sqliteMigrations : pgMigrations).map((m) => ({
    version: m.version,
    name: m.name,
    checksum: migrationChecksum(m),
  }))

  t.test(`reopening is idempotent (${backend.name})`, async (t) => {
    t.teardown(() => backend.cleanup())
    const first = await backend.open()
    t.same(await appliedVersions(first), expected, 'applied at open')
    const account = await first.accounts.create({ name: 'survives' })
    await first.close()
    await first.close() // closing twice is harmless
    for (let i = 0; i < 3; i++) {
      const again = await backend.open()
      t.same(await appliedVersions(again), expected, `reopen ${i + 1}: nothing re-applied`)
      t.same(await again.accounts.get(account.id), account, 'data kept')
      await again.close()
    }
  })

  t.test(`an edited migration refuses to start (${backend.name})`, async (t) => {
    const b = testBackends().find((x) => x.name === backend.name)
    if (!b) throw new Error('no backend')
    t.teardown(() => b.cleanup())
    const store = await b.open()
    await exec(store, "UPDATE schema_migrations SET checksum = 'edited' WHERE version = 1")
    await t.rejects(b.open(), { name: 'MigrationError', message: /1-accounts-keys differs .* must not be edited/ })
  })
}

t.test('SQLite: file, directory and pragmas', async (t) => {
  const root = mkdtempSync(join(tmpdir(), 'gw-mig-'))
  t.teardown(() => rmSync(root, { recursive: true, force: true }))
  const dataDir = join(root, 'does', 'not', 'exist')
  const store = await openStore({ dataDir, secret: TEST_SECRET })
  t.teardown(() => store.close())
  t.ok(existsSync(join(dataDir, 'gateway.db')), '<dataDir>/gateway.db created')
  if (store.backend.kind !== 'sqlite') throw new Error('expected sqlite')
  const { db } = store.backend
  t.equal(db.pragma('journal_mode', { simple: true }), 'wal')
  t.equal(Number(db.pragma('synchronous', { simple: true })), 1, 'NORMAL')
  t.ok(Number(db.pragma('busy_timeout', { simple: true })) >= 1000, 'busy_timeout set')
  t.equal(Number(db.pragma('foreign_keys', { simple: true })), 1)
  t.equal(store.secretGenerated, false)
  await t.rejects(openStore({ dataDir, secret: TEST_SECRET, schema: 'x' }), RangeError, 'schema is PG only')
})

t.test('SQLite: a later migration applies on top (the runner is generic)', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'gw-mig-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const db = new Database(join(dir, 'gateway.db'))
  t.teardown(() => db.close())
  const clock = new ManualClock()
  // Numbered after the shipped list, so the test holds as migrations are added.
  const next = (sqliteMigrations.at(-1)?.version ?? 0) + 1
  const extra: Migration = { version: next, name: 'extra', sql: 'CREATE TABLE extra (id TEXT PRIMARY KEY)' }
  t.same(runSqliteMigrations(db, sqliteMigrations, clock), sqliteMigrations.map((m) => m.version))
  t.same(runSqliteMigrations(db, [...sqliteMigrations, extra], clock), [next])
  t.same(runSqliteMigrations(db, [...sqliteMigrations, extra], clock), [])
  const broken: Migration = { version: next + 1, name: 'broken', sql: 'CREATE TABLE ok3 (x INT); CREATE TABLE nope (' }
  t.throws(() => runSqliteMigrations(db, [...sqliteMigrations, extra, broken], clock))
  t.equal(Number(db.prepare("SELECT count(*) AS n FROM sqlite_master WHERE name = 'ok3'").pluck().get()), 0, 'rolled back whole')
})

t.test('PostgreSQL: 5 instances starting at once on a fresh schema', async (t) => {
  const schema = randomSchemaName()
  const admin = new pg.Client({ connectionString: TEST_DATABASE_URL })
  await admin.connect()
  t.teardown(async () => {
    await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
    await admin.end()
  })
  const stores = await Promise.all(
    Array.from({ length: 5 }, () => openStore({ databaseUrl: TEST_DATABASE_URL, schema, secret: TEST_SECRET }))
  )
  t.teardown(() => Promise.all(stores.map((s) => s.close())))
  t.equal(stores.length, 5, 'all five opened')
  const { rows } = await admin.query<{ version: number }>(`SELECT version FROM "${schema}".schema_migrations`)
  t.same(rows.map((r) => r.version), pgMigrations.map((m) => m.version), 'each migration recorded once')
  const tables = await admin.query<{ table_name: string }>(
    'SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY table_name',
    [schema]
  )
  t.same(
    tables.rows.map((r) => r.table_name),
    ['accounts', 'api_keys', 'console_codes', 'console_email_codes', 'console_outbox', 'console_sessions', 'console_signups', 'console_throttle', 'console_users', 'gateway_instances', 'holds', 'idempotency_keys', 'image_pauses', 'jobs', 'key_usage', 'ledger_entries', 'model_status', 'request_log', 'schema_migrations', 'store_revision', 'wallets'],
    'tables in the schema'
  )
  const account = await stores[0]?.accounts.create({ name: 'shared' })
  t.same(await stores[4]?.accounts.get(account?.id ?? ''), account, 'instances share the data')
})

t.test('PostgreSQL: concurrent runners apply each migration exactly once', async (t) => {
  const schema = randomSchemaName()
  const pools = Array.from(
    { length: 5 },
    () => new pg.Pool({ connectionString: TEST_DATABASE_URL, options: `-c search_path=${schema}`, max: 2 })
  )
  t.teardown(async () => {
    await pools[0]?.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
    await Promise.all(pools.map((p) => p.end()))
  })
  const next = (pgMigrations.at(-1)?.version ?? 0) + 1
  const extra: Migration = { version: next, name: 'extra', sql: 'CREATE TABLE extra (id TEXT PRIMARY KEY)' }
  const results = await Promise.all(pools.map((p) => runPgMigrations(p, [...pgMigrations, extra], schema)))
  t.same(
    results.flat().sort((a, b) => a - b),
    [...pgMigrations.map((m) => m.version), next],
    'every version applied by exactly one runner'
  )
  const broken: Migration = { version: next + 1, name: 'broken', sql: 'CREATE TABLE ok3 (x INT); CREATE TABLE nope (' }
  await t.rejects(runPgMigrations(pools[0] as pg.Pool, [...pgMigrations, extra, broken], schema))
  const ok3 = await pools[1]?.query("SELECT to_regclass('ok3') AS t")
  t.equal(ok3?.rows[0]?.t, null, 'a failed migration is rolled back whole')
  t.same(await runPgMigrations(pools[2] as pg.Pool, [...pgMigrations, extra], schema), [], 'lock released after failure')
})

t.test('PostgreSQL: schema names are checked and a secret is required', async (t) => {
  await t.rejects(openStore({ databaseUrl: TEST_DATABASE_URL, schema: 'Bad-Name', secret: TEST_SECRET }), RangeError)
  await t.rejects(openStore({ databaseUrl: TEST_DATABASE_URL, schema: 'x"; DROP', secret: TEST_SECRET }), RangeError)
  await t.rejects(openStore({ databaseUrl: TEST_DATABASE_URL }), { name: 'ServerSecretError' })
})
