// SQLite migration 017 (holds and ledger_entries WITHOUT ROWID, one partial index of the open
// holds) on a database written by the code at 016: every row survives and reads back the same
// through the store, the open holds still settle, the triggers still refuse; the runner's
// foreign key handling for migrations that rebuild tables (off around the transaction, checked
// before the commit, back on after, the busy wait of a second process kept).
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { Worker } from 'node:worker_threads'
import Database from 'better-sqlite3'
import t from 'tap'
import { type Migration, openStore } from '../plugins/foundation/store/index.js'
import type { HoldCaps } from '../plugins/foundation/store/ledger/index.js'
import { createSqliteLedgerStore } from '../plugins/foundation/store/ledger/sqlite-ledger.js'
import { migrationChecksum } from '../plugins/foundation/store/migrate.js'
import { sqliteMigrations } from '../plugins/foundation/store/migrations/sqlite/index.js'
import { createSqliteRequestLogStore } from '../plugins/foundation/store/request-log/sqlite-request-log.js'
import type { RequestLogRow } from '../plugins/foundation/store/request-log/types.js'
import { createSqliteAccountStore } from '../plugins/foundation/store/sqlite/sqlite-accounts.js'
import { runSqliteMigrations } from '../plugins/foundation/store/sqlite/sqlite-migrate.js'
import { connectSqlite } from '../plugins/foundation/store/sqlite/sqlite-store.js'
import { tableRows, tempDir } from './helpers/sqlite-migrations.js'
import { ManualClock, storeContext, TEST_SECRET } from './helpers/store.js'

const UNIT = 1_000_000_000n
const LAYOUT = 17
const before = sqliteMigrations.filter((m) => m.version < LAYOUT)

/** A database file opened the way the store opens it. */
function openFile (dir: string): Database.Database {
  return connectSqlite(join(dir, 'gateway.db'))
}

function logRow (requestId: string, createdAt: Date, fields: Partial<RequestLogRow> = {}): RequestLogRow {
  return {
    requestId,
    accountId: null,
    keyId: 'key_a',
    route: 'POST /v1/chat/completions',
    operation: 'chat.completions',
    requestedModel: 'gpt-4o-mini',
    answeredModel: 'gpt-4o-mini',
    status: 200,
    outcome: 'completed',
    errorCode: null,
    stream: false,
    usage: { inputTokens: 12, outputTokens: 34, cachedInputTokens: 5, images: 0, audioSeconds: 0, characters: 0, calls: 0, jobs: 0 },
    usageReported: true,
    cost: 123_456n,
    held: 200_000n,
    holdId: null,
    postingId: null,
    overage: null,
    unrecovered: null,
    billingStatus: 'BILLED',
    idempotencyKey: null,
    overheadMs: 1.75,
    upstreamMs: 420.5,
    totalMs: 422.25,
    createdAt,
    ...fields,
  }
}

/** Every schema object's SQL, by name (the autoindexes have none). */
const schemaOf = (db: Database.Database): unknown[] =>
  db.prepare("SELECT type, name, tbl_name, sql FROM sqlite_master WHERE name <> 'sqlite_stat1' ORDER BY name").all()

t.test('017 keeps every row written at 016, and the store goes on with them', async (t) => {
  const dir = tempDir(t, 'gw-rebuild-')
  const clock = new ManualClock('2026-06-01T00:00:00.000Z')
  const ctx = storeContext(clock)
  const caps: HoldCaps = { keyId: 'key_capped', timezone: 'UTC', quota: 100n * UNIT, dailySpendCap: 10n * UNIT, monthlySpendCap: null, dailyImageCap: null, images: 0 }

  // The database as the code at 016 wrote it: the same account, ledger and request log code,
  // on the tables before the rebuild.
  const old = openFile(dir)
  t.same(runSqliteMigrations(old, before, clock), before.map((m) => m.version))
  const accounts = createSqliteAccountStore(old, ctx)
  const ledger = createSqliteLedgerStore(old, ctx)
  const log = createSqliteRequestLogStore(old)
  const account = await accounts.create({ name: 'before the rebuild' })
  await ledger.credit({ accountId: account.id, amount: 50n * UNIT, kind: 'topup', postingId: 'topup-1', note: 'first' })
  await ledger.credit({ accountId: account.id, amount: 5n * UNIT, kind: 'grant', postingId: 'grant-1' })
  const hold = async (requestId: string, amount: bigint, ttlMs: number, withCaps?: HoldCaps): Promise<string> => {
    const held = await ledger.hold({ accountId: account.id, amount, floor: 0n, requestId, ttlMs, caps: withCaps })
    if (!held.ok) throw new Error(`hold ${requestId} refused`)
    return held.holdId
  }
  const open = await hold('req-open', 2n * UNIT, 600_000)
  const cappedOpen = await hold('req-capped-open', 3n * UNIT, 600_000, caps)
  const cappedPosted = await hold('req-capped-posted', 1n * UNIT, 600_000, caps)
  const overrun = await hold('req-overrun', 1n * UNIT, 600_000)
  const released = await hold('req-released', 1n * UNIT, 600_000)
  const expiring = await hold('req-expiring', 1n * UNIT, 1000, caps)
  await ledger.settle({ holdId: cappedPosted, amount: UNIT / 2n, requestId: 'req-capped-posted' })
  await ledger.settle({ holdId: overrun, amount: 2n * UNIT, requestId: 'req-overrun', note: 'over its hold' })
  await ledger.release(released)
  clock.advance(2000)
  t.equal(await ledger.reapExpired(), 1, 'the short hold expired')
  await log.insertMany([
    logRow('req_0001', clock.now(), { accountId: account.id, holdId: cappedPosted, postingId: `post:${cappedPosted}` }),
    logRow('req_0002', clock.now(), { accountId: account.id, idempotencyKey: 'idem-1', overage: UNIT }),
    logRow('req_0003', clock.now(), { billingStatus: 'NOT_BILLED', cost: null, held: null, usage: null, usageReported: null }),
  ])
  const day = '2026-06-01'
  const seen = {
    wallet: await ledger.wallet(account.id),
    entries: await ledger.entries(account.id, { limit: 100 }),
    openHolds: await ledger.openHolds(account.id),
    usage: await ledger.keyUsage(caps.keyId, day),
    log: await log.list({ limit: 100 }),
    logByAccount: await log.list({ accountId: account.id, limit: 100 }),
    logByKey: await log.list({ idempotencyKey: 'idem-1', limit: 100 }),
    holds: tableRows(old, 'holds', 'id'),
    ledgerEntries: tableRows(old, 'ledger_entries', 'id'),
    requestLog: tableRows(old, 'request_log', 'request_id'),
  }
  t.equal(seen.openHolds.length, 2, 'two holds left open')
  t.equal(seen.holds.length, 6)
  await ledger.close()
  old.close()

  const store = await openStore({ dataDir: dir, secret: TEST_SECRET, clock })
  t.teardown(() => store.close())
  if (store.backend.kind !== 'sqlite') throw new Error('expected sqlite')
  const { db } = store.backend
  t.same(
    db.prepare<[], bigint>('SELECT version FROM schema_migrations ORDER BY version').pluck().all().map(Number),
    sqliteMigrations.map((m) => m.version),
    '017 applied on open'
  )
  t.equal(Number(db.pragma('foreign_keys', { simple: true })), 1, 'foreign keys enforced again after the rebuild')
  for (const table of ['holds', 'ledger_entries']) {
    t.match(db.prepare<[string], string>('SELECT sql FROM sqlite_master WHERE name = ?').pluck().get(table), /STRICT, WITHOUT ROWID$/, `${table} WITHOUT ROWID`)
  }
  t.same(
    db.prepare<[], string>("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'holds' ORDER BY name").pluck().all(),
    ['holds_open_idx'],
    'one partial index of the open holds'
  )
  t.same(
    db.prepare<[], string>("SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name IN ('holds', 'ledger_entries') ORDER BY name").pluck().all(),
    ['holds_no_delete', 'holds_transition', 'ledger_entries_no_delete', 'ledger_entries_no_update'],
    'the triggers are back'
  )
  t.same(tableRows(db, 'holds', 'id'), seen.holds, 'holds: every row, every column')
  t.same(tableRows(db, 'ledger_entries', 'id'), seen.ledgerEntries, 'ledger entries: every row, every column')
  t.same(tableRows(db, 'request_log', 'request_id'), seen.requestLog, 'request log untouched')
  t.same(await store.ledger.wallet(account.id), seen.wallet, 'wallet')
  t.same(await store.ledger.entries(account.id, { limit: 100 }), seen.entries, 'entries through the store')
  t.same(await store.ledger.openHolds(account.id), seen.openHolds, 'open holds through the store')
  t.same(await store.ledger.keyUsage(caps.keyId, day), seen.usage, 'key usage')
  t.same(await store.requestLog.list({ limit: 100 }), seen.log, 'request log pages')
  t.same(await store.requestLog.list({ accountId: account.id, limit: 100 }), seen.logByAccount)
  t.same(await store.requestLog.list({ idempotencyKey: 'idem-1', limit: 100 }), seen.logByKey)

  // The holds left open settle after the rebuild, caps and all.
  const settled = await store.ledger.settle({ holdId: open, amount: UNIT, requestId: 'req-open' })
  t.match(settled, { posted: UNIT, released: UNIT, duplicate: false }, 'the open hold settles')
  clock.advance(1000)
  const capped = await store.ledger.settle({ holdId: cappedOpen, amount: 2n * UNIT, requestId: 'req-capped-open' })
  t.match(capped, { posted: 2n * UNIT, released: UNIT, duplicate: false }, 'the capped open hold settles')
  t.same(await store.ledger.openHolds(account.id), [], 'none left open')
  t.match(await store.ledger.settle({ holdId: cappedPosted, amount: UNIT, requestId: 'again' }), { posted: 0n, duplicate: true }, 'a hold posted before the rebuild stays posted')
  t.match(await store.ledger.release(expiring), { released: 0n, duplicate: true }, 'a hold reaped before the rebuild stays expired')
  const wallet = await store.ledger.wallet(account.id)
  t.equal(wallet.balance, seen.wallet.balance - 3n * UNIT, 'both charges posted')
  t.equal(wallet.held, 0n, 'nothing held')
  const spend = (await store.ledger.keyUsage(caps.keyId, day)).find((row) => row.kind === 'spend')
  t.match(spend, { used: UNIT / 2n + 2n * UNIT, held: 0n }, 'the capped hold moved its reservation to used')
  t.match(await store.ledger.entries(account.id, { limit: 1 }), [{ kind: 'charge', holdId: cappedOpen, amount: -2n * UNIT }], 'newest entry: its charge')

  // The rebuilt tables still refuse what they refused.
  t.throws(() => db.prepare('UPDATE ledger_entries SET note = ? WHERE posting_id = ?').run('edited', 'topup-1'), /append-only/)
  t.throws(() => db.prepare('DELETE FROM ledger_entries WHERE posting_id = ?').run('topup-1'), /append-only/)
  t.throws(() => db.prepare('DELETE FROM holds WHERE id = ?').run(open), /append-only/)
  t.throws(() => db.prepare("UPDATE holds SET status = 'open', settled_at = NULL, posted_amount = NULL WHERE id = ?").run(open), /changes once/)
  t.throws(() => db.prepare("INSERT INTO holds (id, account_id, amount, request_id, expires_at, created_at) VALUES ('hold_x', 'acct_none', 1, 'r', 1, 1)").run(), /FOREIGN KEY/)
  t.throws(
    () => db.prepare("INSERT INTO ledger_entries (id, account_id, amount, kind, posting_id, hold_id, created_at) VALUES ('e_x', ?, -1, 'charge', 'post:hold_none', 'hold_none', 1)").run(account.id),
    /FOREIGN KEY/
  )
  t.throws(() => db.prepare('INSERT INTO holds (id, account_id, amount, request_id, expires_at, created_at) VALUES (NULL, ?, 1, ?, 1, 1)').run(account.id, 'r'), /NOT NULL/, 'a WITHOUT ROWID key is never NULL')

  // The plans of the holds' readers: the partial index, not the table.
  const plan = (sql: string): string => db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(0).map((r) => (r as { detail: string }).detail).join(' | ')
  t.match(plan("SELECT * FROM holds WHERE status = 'open' AND expires_at <= ? ORDER BY expires_at"), /USING INDEX holds_open_idx/, 'the reaper scans the open holds only')
  t.match(plan("SELECT * FROM holds WHERE account_id = ? AND status = 'open' ORDER BY created_at, id"), /USING INDEX holds_open_idx \(account_id=\?\)/, "an account's open holds")
})

t.test('a database upgraded to 017 has the schema of one created at 017', async (t) => {
  const clock = new ManualClock()
  const upgraded = new Database(join(tempDir(t, 'gw-rebuild-'), 'gateway.db'))
  t.teardown(() => upgraded.close())
  runSqliteMigrations(upgraded, before, clock)
  runSqliteMigrations(upgraded, sqliteMigrations, clock)
  const fresh = new Database(join(tempDir(t, 'gw-rebuild-'), 'gateway.db'))
  t.teardown(() => fresh.close())
  runSqliteMigrations(fresh, sqliteMigrations, clock)
  t.same(schemaOf(upgraded), schemaOf(fresh))
})

/** A migration after the shipped ones that rebuilds holds and forgets to copy its rows. */
const next = (sqliteMigrations.at(-1)?.version ?? 0) + 1
const forgetful = (rebuildsTables: boolean): Migration => ({
  version: next,
  name: 'forgetful',
  rebuildsTables,
  sql: `
CREATE TABLE holds_new (id TEXT PRIMARY KEY, account_id TEXT NOT NULL) STRICT, WITHOUT ROWID;
DROP TABLE holds;
ALTER TABLE holds_new RENAME TO holds;
`,
})

t.test('the runner: a rebuild that leaves a reference dangling fails and rolls back whole', async (t) => {
  const dir = tempDir(t, 'gw-rebuild-')
  const store = await openStore({ dataDir: dir, secret: TEST_SECRET })
  t.teardown(() => store.close())
  if (store.backend.kind !== 'sqlite') throw new Error('expected sqlite')
  const { db } = store.backend
  const account = await store.accounts.create({ name: 'charged' })
  await store.ledger.credit({ accountId: account.id, amount: UNIT, kind: 'topup', postingId: 'topup-1' })
  const held = await store.ledger.hold({ accountId: account.id, amount: UNIT, floor: 0n, requestId: 'r', ttlMs: 60_000 })
  if (!held.ok) throw new Error('hold refused')
  await store.ledger.settle({ holdId: held.holdId, amount: UNIT / 2n, requestId: 'r' })
  const holds = tableRows(db, 'holds', 'id')
  const schema = schemaOf(db)
  const clock = new ManualClock()
  const extra: Migration = { version: next, name: 'extra', sql: 'CREATE TABLE extra (id TEXT PRIMARY KEY)' }

  t.throws(() => runSqliteMigrations(db, [...sqliteMigrations, forgetful(true)], clock), {
    name: 'MigrationError',
    message: /1 rows referencing rows that do not exist \(ledger_entries → holds\); rolled back/,
  })
  t.same(schemaOf(db), schema, 'the schema as it was')
  t.same(tableRows(db, 'holds', 'id'), holds, 'the holds as they were')
  t.equal(Number(db.pragma('foreign_keys', { simple: true })), 1, 'foreign keys back on after the failure')
  t.throws(() => runSqliteMigrations(db, [...sqliteMigrations, forgetful(false)], clock), /FOREIGN KEY constraint failed/,
    'without the flag the referenced table cannot be dropped at all')
  t.same(schemaOf(db), schema)

  const broken: Migration = { ...forgetful(true), sql: 'CREATE TABLE ok3 (x INT); CREATE TABLE nope (' }
  t.throws(() => runSqliteMigrations(db, [...sqliteMigrations, broken], clock), /syntax error|incomplete input/)
  t.equal(Number(db.pragma('foreign_keys', { simple: true })), 1, 'back on after an SQL error too')
  t.equal(db.prepare("SELECT count(*) FROM sqlite_master WHERE name = 'ok3'").pluck().get(), 0n, 'rolled back whole')

  db.exec('BEGIN')
  t.throws(() => runSqliteMigrations(db, [...sqliteMigrations, { ...extra, rebuildsTables: true }], clock), {
    name: 'MigrationError',
    message: /inside an open transaction/,
  })
  db.exec('ROLLBACK')

  // A rebuild that keeps every reference commits, and leaves foreign keys on.
  t.same(runSqliteMigrations(db, [...sqliteMigrations, { ...extra, rebuildsTables: true }], clock), [next])
  t.equal(Number(db.pragma('foreign_keys', { simple: true })), 1)
  t.same(runSqliteMigrations(db, [...sqliteMigrations, { ...extra, rebuildsTables: true }], clock), [], 'applied once')
  t.same(await store.ledger.entries(account.id, { limit: 10 }).then((e) => e.length), 2, 'the ledger still reads')
})

t.test('the runner: a second process that holds the write lock is waited for, and may apply the rebuild first', async (t) => {
  const dir = tempDir(t, 'gw-rebuild-')
  const clock = new ManualClock()
  const db = openFile(dir)
  t.teardown(() => db.close())
  runSqliteMigrations(db, before, clock)
  const layout = sqliteMigrations.find((m) => m.version === LAYOUT)
  if (!layout) throw new Error('no migration 017')

  // The other process takes the write lock, holds it a while, and applies 017 itself under it.
  const worker = new Worker(
    `
const { parentPort, workerData } = require('node:worker_threads')
const Database = require(workerData.driver)
const db = new Database(workerData.file)
db.pragma('busy_timeout = 5000')
db.pragma('foreign_keys = OFF')
db.exec('BEGIN IMMEDIATE')
parentPort.postMessage('locked')
Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, workerData.holdMs)
db.exec(workerData.sql)
db.prepare('INSERT INTO schema_migrations (version, name, checksum, applied_at) VALUES (?, ?, ?, 0)').run(workerData.version, workerData.name, workerData.checksum)
db.exec('COMMIT')
db.close()
`,
    {
      eval: true,
      workerData: {
        driver: createRequire(import.meta.url).resolve('better-sqlite3'),
        file: join(dir, 'gateway.db'),
        holdMs: 300,
        sql: layout.sql,
        version: layout.version,
        name: layout.name,
        checksum: migrationChecksum(layout),
      },
    }
  )
  const exited = new Promise((resolve, reject) => {
    worker.once('exit', resolve)
    worker.once('error', reject)
  })
  await new Promise((resolve) => worker.once('message', resolve))
  const started = Date.now()
  t.same(runSqliteMigrations(db, sqliteMigrations.filter((m) => m.version <= LAYOUT), clock), [], 'the other process applied 017; this one waited and found nothing to do')
  t.ok(Date.now() - started >= 250, 'it waited on busy_timeout for the lock')
  t.equal(Number(db.pragma('foreign_keys', { simple: true })), 1, 'foreign keys on again')
  await exited
  t.match(db.prepare<[string], string>('SELECT sql FROM sqlite_master WHERE name = ?').pluck().get('holds'), /WITHOUT ROWID/)
})
