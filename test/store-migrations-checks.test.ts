// SQLite migration 018: the CHECKs of the holds' status, the ledger entries' kind and the key
// usage buckets' kind are written as comparisons joined by OR instead of `IN (…)` lists, which SQLite checked by building a
// temporary B-tree on every insert and update. Shown here: the rows written at 017 survive and
// the store goes on with them; the rest of the schema is as 017 left it; the new CHECKs accept
// exactly what the old ones accepted (any string, by property); the tables still refuse a bad
// status or kind; and the statements a billed request runs build no temporary B-tree any more
// (they did at 017, so that assertion can fail).
import { join } from 'node:path'
import Database from 'better-sqlite3'
import fc from 'fast-check'
import t from 'tap'
import { openStore } from '../plugins/foundation/store/index.js'
import type { HoldCaps } from '../plugins/foundation/store/ledger/index.js'
import { createSqliteLedgerStore } from '../plugins/foundation/store/ledger/sqlite-ledger.js'
import { sqliteMigrations } from '../plugins/foundation/store/migrations/sqlite/index.js'
import { createSqliteAccountStore } from '../plugins/foundation/store/sqlite/sqlite-accounts.js'
import { runSqliteMigrations } from '../plugins/foundation/store/sqlite/sqlite-migrate.js'
import { connectSqlite } from '../plugins/foundation/store/sqlite/sqlite-store.js'
import { tableRows, tempDir } from './helpers/sqlite-migrations.js'
import { ManualClock, storeContext, TEST_SECRET } from './helpers/store.js'

const UNIT = 1_000_000_000n
const CHECKS = 18
const before = sqliteMigrations.filter((m) => m.version < CHECKS)

const schemaSql = (db: Database.Database): Array<{ name: string, sql: string | null }> =>
  db.prepare<[], { name: string, sql: string | null }>("SELECT name, sql FROM sqlite_master WHERE name <> 'sqlite_stat1' ORDER BY name").all()

const OLD_STATUS = "status IN ('open', 'posted', 'released', 'expired')"
const NEW_STATUS = "status = 'open' OR status = 'posted' OR status = 'released' OR status = 'expired'"
const OLD_KIND = "kind IN ('topup', 'grant', 'charge', 'adjustment')"
const NEW_KIND = "kind = 'topup' OR kind = 'grant' OR kind = 'charge' OR kind = 'adjustment'"
const OLD_USAGE = "kind IN ('total', 'spend', 'images')"
const NEW_USAGE = "kind = 'total' OR kind = 'spend' OR kind = 'images'"

/**
 * The statements of a billed request that run one of the CHECKs: a hold's insert and close, a
 * charge's insert, a capped key's reservation. (An UPDATE runs the CHECKs of the columns it
 * sets: a capped key's give-back, which sets `held` and `used`, never ran the kind's.)
 */
const CHECKED = {
  'insert a hold': "INSERT INTO holds (id, account_id, amount, status, request_id, expires_at, created_at) VALUES (?, ?, ?, 'open', ?, ?, ?)",
  'close a hold': "UPDATE holds SET status = ?, settled_at = ?, posted_amount = ?, overage = ?, unrecovered = ? WHERE id = ? AND status = 'open' AND expires_at = ?",
  'insert a charge': `INSERT INTO ledger_entries (id, account_id, amount, kind, posting_id, hold_id, request_id, note, overage, unrecovered, created_at)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (posting_id) DO NOTHING`,
  'reserve for a capped key': `INSERT INTO key_usage (key_id, kind, period, used, held) VALUES (?, ?, ?, 0, ?)
    ON CONFLICT (key_id, kind, period) DO UPDATE SET held = held + excluded.held`,
}

/** How many temporary B-trees each statement opens (EXPLAIN's OpenEphemeral). */
function ephemeralTables (db: Database.Database): Record<string, number> {
  const out: Record<string, number> = {}
  for (const [name, sql] of Object.entries(CHECKED)) {
    const unbound = Array.from({ length: sql.split('?').length - 1 }, () => null)
    out[name] = db.prepare<unknown[], { opcode: string }>(`EXPLAIN ${sql}`).all(unbound).filter((op) => op.opcode === 'OpenEphemeral').length
  }
  return out
}

t.test('018 keeps every row written at 017, rewrites the three CHECKs only, and a billed request builds no temporary B-tree', async (t) => {
  const dir = tempDir(t, 'gw-checks-')
  const clock = new ManualClock('2026-06-01T00:00:00.000Z')
  const ctx = storeContext(clock)

  const old = connectSqlite(join(dir, 'gateway.db'))
  runSqliteMigrations(old, before, clock)
  const each = (n: number): Record<string, number> => Object.fromEntries(Object.keys(CHECKED).map((name) => [name, n]))
  t.same(ephemeralTables(old), each(1), 'at 017 each statement builds one for its IN list')
  const accounts = createSqliteAccountStore(old, ctx)
  const ledger = createSqliteLedgerStore(old, ctx)
  const account = await accounts.create({ name: 'before 018' })
  await ledger.credit({ accountId: account.id, amount: 50n * UNIT, kind: 'topup', postingId: 'topup-1' })
  await ledger.credit({ accountId: account.id, amount: 5n * UNIT, kind: 'grant', postingId: 'grant-1' })
  // No store call writes an adjustment yet; the kind is in the schema, so a row of it must survive too.
  old.prepare("INSERT INTO ledger_entries (id, account_id, amount, kind, posting_id, created_at) VALUES ('entry_adjust', ?, -1, 'adjustment', 'adjust-1', 1)").run(account.id)
  const caps: HoldCaps = { keyId: 'key_capped', timezone: 'UTC', quota: 100n * UNIT, dailySpendCap: 10n * UNIT, monthlySpendCap: null, dailyImageCap: 5, images: 1 }
  const hold = async (requestId: string, ttlMs: number, withCaps?: HoldCaps): Promise<string> => {
    const held = await ledger.hold({ accountId: account.id, amount: UNIT, floor: 0n, requestId, ttlMs, caps: withCaps })
    if (!held.ok) throw new Error(`hold ${requestId} refused`)
    return held.holdId
  }
  const open = await hold('req-open', 600_000)
  const posted = await hold('req-posted', 600_000, caps)
  await hold('req-capped-open', 600_000, caps)
  const released = await hold('req-released', 600_000)
  await hold('req-expired', 1000)
  await ledger.settle({ holdId: posted, amount: UNIT / 2n, requestId: 'req-posted' })
  await ledger.release(released)
  clock.advance(2000)
  t.equal(await ledger.reapExpired(), 1)
  const seen = {
    holds: tableRows(old, 'holds', 'id'),
    entries: tableRows(old, 'ledger_entries', 'id'),
    usage: tableRows(old, 'key_usage', 'key_id, kind, period'),
    wallet: await ledger.wallet(account.id),
    schema: schemaSql(old),
  }
  t.same(new Set((seen.holds as Array<{ status: string }>).map((h) => h.status)), new Set(['open', 'posted', 'released', 'expired']), 'a hold in every status')
  t.same(new Set((seen.entries as Array<{ kind: string }>).map((e) => e.kind)), new Set(['topup', 'grant', 'adjustment', 'charge']), 'an entry of every kind')
  t.same(new Set((seen.usage as Array<{ kind: string }>).map((u) => u.kind)), new Set(['total', 'spend', 'images']), 'a key usage bucket of every kind')
  await ledger.close()
  old.close()

  const store = await openStore({ dataDir: dir, secret: TEST_SECRET, clock })
  t.teardown(() => store.close())
  if (store.backend.kind !== 'sqlite') throw new Error('expected sqlite')
  const { db } = store.backend
  t.ok(db.prepare('SELECT 1 FROM schema_migrations WHERE version = ?').get(CHECKS), '018 applied on open')
  t.same(tableRows(db, 'holds', 'id'), seen.holds, 'holds: every row, every column')
  t.same(tableRows(db, 'ledger_entries', 'id'), seen.entries, 'ledger entries: every row, every column')
  t.same(tableRows(db, 'key_usage', 'key_id, kind, period'), seen.usage, 'key usage: every row, every column')
  t.same(await store.ledger.wallet(account.id), seen.wallet, 'the wallet')
  // Every schema object as 017 left it, but the three CHECKs.
  // (A table renamed into place is written with its name quoted, as 017's were.)
  const rewritten = seen.schema.map((o) => ({
    name: o.name,
    sql: o.sql?.replace(OLD_STATUS, NEW_STATUS).replace(OLD_KIND, NEW_KIND).replace(OLD_USAGE, NEW_USAGE).replace('CREATE TABLE key_usage (', 'CREATE TABLE "key_usage" (') ?? null,
  }))
  t.same(schemaSql(db), rewritten, 'the same schema but the three CHECKs')
  t.not(JSON.stringify(schemaSql(db)), JSON.stringify(seen.schema), 'and those did change')
  t.same(ephemeralTables(db), each(0), 'no temporary B-tree any more')

  // The store goes on: the open hold settles, and a new hold opens, closes and charges.
  t.match(await store.ledger.settle({ holdId: open, amount: UNIT, requestId: 'req-open' }), { posted: UNIT, duplicate: false })
  const held = await store.ledger.hold({ accountId: account.id, amount: UNIT, floor: 0n, requestId: 'req-after', ttlMs: 60_000 })
  if (!held.ok) throw new Error('hold refused')
  t.match(await store.ledger.settle({ holdId: held.holdId, amount: UNIT / 4n, requestId: 'req-after' }), { posted: UNIT / 4n, released: UNIT - UNIT / 4n })
  t.equal((await store.ledger.wallet(account.id)).balance, seen.wallet.balance - UNIT - UNIT / 4n, 'both charges posted')

  // The rewritten CHECKs still refuse what is not a status or a kind.
  t.throws(() => db.prepare("INSERT INTO holds (id, account_id, amount, status, request_id, expires_at, created_at) VALUES ('hold_bad', ?, 1, 'pending', 'r', 1, 1)").run(account.id),
    /CHECK constraint failed/, 'an insert with another status')
  const another = await store.ledger.hold({ accountId: account.id, amount: UNIT, floor: 0n, requestId: 'req-bad', ttlMs: 60_000 })
  if (!another.ok) throw new Error('hold refused')
  t.throws(() => db.prepare("UPDATE holds SET status = 'Posted', settled_at = 1, posted_amount = 1 WHERE id = ?").run(another.holdId),
    /CHECK constraint failed/, 'a close to another status')
  t.throws(() => db.prepare("INSERT INTO ledger_entries (id, account_id, amount, kind, posting_id, created_at) VALUES ('e_bad', ?, 1, 'refund', 'p_bad', 1)").run(account.id),
    /CHECK constraint failed/, 'an entry of another kind')
  t.throws(() => db.prepare("INSERT INTO key_usage (key_id, kind, period) VALUES ('key_capped', 'monthly', '2026-06')").run(),
    /CHECK constraint failed/, 'a key usage bucket of another kind')
})

t.test('the comparisons accept exactly what the IN lists accepted, for any value', (t) => {
  const db = new Database(':memory:')
  t.teardown(() => db.close())
  // Each CHECK's expression with the value in place of its column (one parameter per occurrence).
  const verdicts = db.prepare<unknown[], Record<'oldStatus' | 'newStatus' | 'oldKind' | 'newKind' | 'oldUsage' | 'newUsage', number | null>>(
    `SELECT (${OLD_STATUS.replaceAll('status', '?')}) AS oldStatus, (${NEW_STATUS.replaceAll('status', '?')}) AS newStatus,
            (${OLD_KIND.replaceAll('kind', '?')}) AS oldKind, (${NEW_KIND.replaceAll('kind', '?')}) AS newKind,
            (${OLD_USAGE.replaceAll('kind', '?')}) AS oldUsage, (${NEW_USAGE.replaceAll('kind', '?')}) AS newUsage`
  )
  const slots = verdicts.source.split('?').length - 1
  // A CHECK fails only when its expression is false (0); NULL passes.
  const passes = (v: number | null): boolean => v !== 0
  const words = ['open', 'posted', 'released', 'expired', 'topup', 'grant', 'charge', 'adjustment', 'total', 'spend', 'images']
  const value = fc.oneof(
    fc.constantFrom(...words),
    fc.constantFrom(...words).map((w) => w.toUpperCase()),
    fc.constantFrom(...words).map((w) => ` ${w}`),
    fc.constantFrom(...words).map((w) => `${w}\u0000`),
    fc.string(),
    fc.integer(),
    fc.constant(null)
  )
  fc.assert(fc.property(value, (v) => {
    const r = verdicts.get(Array.from({ length: slots }, () => v))
    if (!r) return false
    return passes(r.oldStatus) === passes(r.newStatus) && passes(r.oldKind) === passes(r.newKind) && passes(r.oldUsage) === passes(r.newUsage)
  }), { numRuns: 2000 })
  t.pass('2,000 values, the same verdict from both forms of each of the three CHECKs')
  t.end()
})
