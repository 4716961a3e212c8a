// The console store's contract on both stores: throttle counters (windows, give-back, sweep,
// concurrent counting), email codes (attempts, expiry, one winner among concurrent right
// guesses), pending sign-ups (start, hold, restart, complete, concurrent starts), and
// migration 015 turning an unverified user of an older version into a pending sign-up.
import t from 'tap'
import type tap from 'tap'
import Database from 'better-sqlite3'
import pg from 'pg'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openConsoleStore, type ConsoleStore } from '../plugins/apps/console/index.js'
import { pgMigrations } from '../plugins/foundation/store/migrations/pg/index.js'
import { sqliteMigrations } from '../plugins/foundation/store/migrations/sqlite/index.js'
import { runPgMigrations } from '../plugins/foundation/store/pg/pg-migrate.js'
import { runSqliteMigrations } from '../plugins/foundation/store/sqlite/sqlite-migrate.js'
import { dropSchema, randomSchemaName, ManualClock, TEST_DATABASE_URL, testBackends } from './helpers/store.js'

const T0 = new Date('2030-01-01T00:00:00.000Z')
const at = (ms: number): Date => new Date(T0.getTime() + ms)

for (const backend of testBackends()) {
  t.test(`console store on ${backend.name}`, async (t) => {
    t.teardown(() => backend.cleanup())
    const store = await backend.open()
    const cs: ConsoleStore = openConsoleStore(store.backend)

    t.test('throttle counters: a window from the first event, give-back, clear, sweep', async (t) => {
      const first = await cs.count('k1', 60_000, T0)
      t.same(first, { count: 1, windowEndsAt: at(60_000) }, 'the first event opens a window')
      t.equal((await cs.count('k1', 60_000, at(10_000))).count, 2)
      const third = await cs.count('k1', 60_000, at(59_999))
      t.same(third, { count: 3, windowEndsAt: at(60_000) }, 'later events keep the window end')
      await cs.uncount('k1', at(59_999))
      t.equal((await cs.count('k1', 60_000, at(59_999))).count, 3, 'a given-back event is not counted')
      t.same(await cs.count('k1', 60_000, at(60_000)), { count: 1, windowEndsAt: at(120_000) }, 'an ended window starts again at 1')
      await cs.uncount('k1', at(60_000))
      await cs.uncount('k1', at(60_000))
      t.equal((await cs.count('k1', 60_000, at(60_000))).count, 1, 'never below 0')
      await cs.clearCount('k1')
      t.equal((await cs.count('k1', 60_000, at(61_000))).count, 1, 'cleared')
      await cs.count('k2', 1000, T0)
      await cs.sweepCounts(at(200_000))
      const left = store.backend.kind === 'sqlite'
        ? store.backend.db.prepare('SELECT key FROM console_throttle ORDER BY key').all()
        : (await store.backend.pool.query('SELECT key FROM console_throttle ORDER BY key')).rows
      t.same(left, [], 'ended windows are swept')
      const counts = await Promise.all(Array.from({ length: 20 }, async () => (await cs.count('k3', 60_000, T0)).count))
      t.same([...counts].sort((a, b) => a - b), Array.from({ length: 20 }, (_, i) => i + 1), '20 concurrent events: 20 distinct counts')
    })

    t.test('email codes: wrong guesses void the code, expiry, one winner among concurrent right guesses', async (t) => {
      const seen: string[] = []
      const wrong = (stored: string): boolean => { seen.push(stored); return false }
      await cs.setCode('verify', 'a@example.org', 'hash-a', at(600_000))
      for (let i = 0; i < 4; i++) t.equal(await cs.checkCode('verify', 'a@example.org', wrong, T0, 5), 'invalid')
      t.same(seen, Array(4).fill('hash-a'), 'the matcher is given the stored digest')
      t.equal(await cs.checkCode('verify', 'a@example.org', () => true, T0, 5), 'ok', 'the right code within the attempts')
      t.equal(await cs.checkCode('verify', 'a@example.org', () => true, T0, 5), 'none', 'used up')
      await cs.setCode('verify', 'a@example.org', 'hash-b', at(600_000))
      for (let i = 0; i < 5; i++) t.equal(await cs.checkCode('verify', 'a@example.org', wrong, T0, 5), 'invalid')
      t.equal(await cs.checkCode('verify', 'a@example.org', () => true, T0, 5), 'none', 'void after 5 wrong guesses: even the right one fails')
      await cs.setCode('reset', 'a@example.org', 'hash-c', at(600_000))
      t.equal(await cs.checkCode('verify', 'a@example.org', () => true, T0, 5), 'none', 'purposes are apart')
      t.equal(await cs.checkCode('reset', 'a@example.org', () => true, at(600_000), 5), 'expired', 'expired at its time')
      t.equal(await cs.checkCode('reset', 'a@example.org', () => true, T0, 5), 'none', 'an expired code is deleted')
      await cs.setCode('reset', 'a@example.org', 'hash-d', at(600_000))
      const results = await Promise.all(Array.from({ length: 6 }, () => cs.checkCode('reset', 'a@example.org', () => true, T0, 5)))
      t.equal(results.filter((r) => r === 'ok').length, 1, `one winner (${results.join(' ')})`)
    })

    t.test('pending sign-ups: start, held until restartBefore, restart, complete, concurrent starts', async (t) => {
      const start = (email: string, hash: string, nowMs: number, restartBeforeMs: number): ReturnType<ConsoleStore['startSignup']> =>
        cs.startSignup({ email, passwordHash: hash, codeHash: `code-${hash}`, codeExpiresAt: at(nowMs + 600_000), now: at(nowMs), restartBefore: at(restartBeforeMs) })
      t.equal(await start('s@example.org', 'h1', 0, -600_000), 'started')
      t.equal(await start('s@example.org', 'h2', 1000, -599_000), 'pending', 'a young pending sign-up holds the address')
      t.match(await cs.pendingSignup('s@example.org'), { passwordHash: 'h1', startedAt: T0, accountId: null })
      t.equal(await start('s@example.org', 'h3', 600_001, 1), 'started', 'an old one is restarted')
      t.match(await cs.pendingSignup('s@example.org'), { passwordHash: 'h3', startedAt: at(600_001) }, 'with the new password')
      t.equal(await cs.checkCode('verify', 's@example.org', (h) => h === 'code-h3', at(600_001), 5), 'ok', 'and the new code')
      const account = await store.accounts.create({ name: 's' })
      t.equal(await cs.completeSignup({ email: 's@example.org', userId: 'usr_s', accountId: account.id, at: at(700_000) }), 'ok')
      t.match(await cs.userByEmail('s@example.org'), { id: 'usr_s', accountId: account.id, passwordHash: 'h3', emailVerifiedAt: at(700_000) })
      t.equal(await cs.pendingSignup('s@example.org'), null, 'no longer pending')
      t.equal(await start('s@example.org', 'h4', 800_000, 800_000), 'registered')
      t.equal(await cs.completeSignup({ email: 's@example.org', userId: 'usr_t', accountId: account.id, at: at(900_000) }), 'gone')
      const results = await Promise.all(Array.from({ length: 5 }, (_, i) => start('race@example.org', `r${i}`, 0, -600_000)))
      t.same([...results].sort(), ['pending', 'pending', 'pending', 'pending', 'started'], 'concurrent sign-ups: one starts')
      await cs.setPassword('usr_s', 'h5')
      t.equal((await cs.userByEmail('s@example.org'))?.passwordHash, 'h5', 'a new password')
      for (const id of ['ses_1', 'ses_2']) {
        await cs.createSession({ id, userId: 'usr_s', accountId: account.id, userAgent: '', address: '', createdAt: T0, lastSeenAt: T0, expiresAt: at(1e9) }, `tok-${id}`)
      }
      t.equal(await cs.deleteSessionsOf('usr_s'), 2, 'every session ended')
      t.same(await cs.listSessions('usr_s', T0), [])

      // At most `keep` sessions: the oldest end, the one just created always stays (even when
      // every session has the same time and its id sorts first), and expired ones go too.
      const session = (id: string, createdMs: number, expiresMs = 1e9): Parameters<ConsoleStore['createSession']>[0] =>
        ({ id, userId: 'usr_s', accountId: account.id, userAgent: '', address: '', createdAt: at(createdMs), lastSeenAt: at(createdMs), expiresAt: at(expiresMs) })
      await cs.createSession(session('ses_old_expired', 0, 10), 'tok-expired')
      for (let i = 1; i <= 5; i++) await cs.createSession(session(`ses_k${i}`, i * 100), `tok-k${i}`, 3)
      t.same((await cs.listSessions('usr_s', at(50))).map((x) => x.id), ['ses_k5', 'ses_k4', 'ses_k3'], 'the 3 newest stay')
      t.equal(await cs.sessionByToken('tok-expired', at(0)), null, 'the expired one was deleted with them')
      await cs.createSession(session('ses_0same', 500), 'tok-same', 3)
      t.same((await cs.listSessions('usr_s', at(50))).map((x) => x.id).sort(), ['ses_0same', 'ses_k4', 'ses_k5'], 'same time, lowest id: the new one stays, the oldest goes')
      await Promise.all(Array.from({ length: 8 }, async (_, i) => { await cs.createSession(session(`ses_c${i}`, 1000), `tok-c${i}`, 3) }))
      t.ok((await cs.listSessions('usr_s', at(50))).length <= 3, 'concurrent sign-ins: still at most 3')
    })
  })
}

const LEGACY = {
  account: "INSERT INTO accounts (id, name, status, tier, created_at) VALUES ('acct_old', 'old@example.org', 'active', 'free', $t)",
  unverified: "INSERT INTO console_users (id, account_id, email, password_hash, email_verified_at, created_at) VALUES ('usr_old', 'acct_old', 'old@example.org', 'scrypt$old', NULL, $t)",
  code: "INSERT INTO console_codes (user_id, code_hash, attempts, expires_at) VALUES ('usr_old', 'digest', 0, $t)",
  verifiedAccount: "INSERT INTO accounts (id, name, status, tier, created_at) VALUES ('acct_ok', 'ok@example.org', 'active', 'free', $t)",
  verified: "INSERT INTO console_users (id, account_id, email, password_hash, email_verified_at, created_at) VALUES ('usr_ok', 'acct_ok', 'ok@example.org', 'scrypt$ok', $t, $t)"
}

async function checkMigrated (t: Pick<typeof tap, 'equal' | 'match'>, cs: ConsoleStore): Promise<void> {
  t.equal(await cs.userByEmail('old@example.org'), null, 'the unverified user is gone')
  t.match(await cs.pendingSignup('old@example.org'), { passwordHash: 'scrypt$old', accountId: 'acct_old' }, 'a pending sign-up keeping its password and account')
  t.match(await cs.userByEmail('ok@example.org'), { id: 'usr_ok', passwordHash: 'scrypt$ok' }, 'a verified user stays')
}

t.test('migration 015 on SQLite: an unverified user becomes a pending sign-up', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'console-015-'))
  const db = new Database(join(dir, 'db.sqlite'))
  t.teardown(() => { db.close(); rmSync(dir, { recursive: true, force: true }) })
  db.pragma('foreign_keys = ON')
  const clock = new ManualClock(T0)
  runSqliteMigrations(db, sqliteMigrations.filter((m) => m.version < 15), clock)
  for (const sql of Object.values(LEGACY)) db.prepare(sql.replace(/\$t/g, String(T0.getTime()))).run()
  t.same(runSqliteMigrations(db, sqliteMigrations.filter((m) => m.version <= 15), clock), [15])
  await checkMigrated(t, openConsoleStore({ kind: 'sqlite', db }))
})

t.test('migration 015 on PostgreSQL: an unverified user becomes a pending sign-up', async (t) => {
  const schema = randomSchemaName()
  const pool = new pg.Pool({ connectionString: TEST_DATABASE_URL, options: `-c search_path=${schema}`, max: 2 })
  t.teardown(async () => { await pool.end(); await dropSchema(schema) })
  await runPgMigrations(pool, pgMigrations.filter((m) => m.version < 15), schema)
  for (const sql of Object.values(LEGACY)) await pool.query(sql.replace(/\$t/g, '$1'), [T0])
  t.same(await runPgMigrations(pool, pgMigrations.filter((m) => m.version <= 15), schema), [15])
  await checkMigrated(t, openConsoleStore({ kind: 'pg', pool }))
})
