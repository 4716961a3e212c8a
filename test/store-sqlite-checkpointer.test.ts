// The WAL is checkpointed by the worker thread of checkpointer.ts, not by the connection that
// commits: the checkpoint's syncs wait there, not on the event loop. What the worker did is read
// where SQLite keeps it, the wal-index header (helpers/wal-index.ts).
import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import t, { type Test } from 'tap'
import type { Database as SqliteConnection } from 'better-sqlite3'
import { CHECKPOINT_FRAMES, CHECKPOINT_POLL_MS, checkpointInBackground } from '../plugins/foundation/store/sqlite/checkpointer.js'
import { connectSqlite } from '../plugins/foundation/store/sqlite/sqlite-store.js'
import { sqliteTestBackend } from './helpers/store.js'
import { walState, type WalState } from './helpers/wal-index.js'

/** Polls until every frame of the WAL is in the database file, or `ms` passed. */
async function backfilled (file: string, ms: number): Promise<WalState> {
  const until = Date.now() + ms
  let state = walState(file)
  while ((state.mxFrame === 0 || state.nBackfill < state.mxFrame) && Date.now() < until) {
    await sleep(10)
    state = walState(file)
  }
  return state
}

/** A database file with a scratch table, its connection never checkpointing by itself. */
function scratch (t: Test): { file: string, db: SqliteConnection } {
  const dir = mkdtempSync(join(tmpdir(), 'gateway-checkpoint-'))
  const file = join(dir, 'scratch.db')
  const db = connectSqlite(file)
  db.pragma('wal_autocheckpoint = 0')
  db.exec('CREATE TABLE pages (id INTEGER PRIMARY KEY, body BLOB NOT NULL)')
  t.teardown(() => {
    db.close()
    rmSync(dir, { recursive: true, force: true })
  })
  return { file, db }
}

/** Writes `n` rows of one page each, in one transaction: about `n` WAL frames. */
function writePages (db: SqliteConnection, n: number): void {
  const insert = db.prepare('INSERT INTO pages (body) VALUES (?)')
  db.transaction(() => { for (let i = 0; i < n; i++) insert.run(Buffer.alloc(3900, i % 251)) })()
}

t.test('the worker checkpoints a WAL past CHECKPOINT_FRAMES; below it the WAL is left alone', async (t) => {
  const { file, db } = scratch(t)
  const lease = checkpointInBackground(file)
  writePages(db, Math.ceil(CHECKPOINT_FRAMES * 1.5))
  const after = await backfilled(file, 5_000)
  t.ok(after.mxFrame >= CHECKPOINT_FRAMES, `the WAL held ${after.mxFrame} frames`)
  t.equal(after.nBackfill, after.mxFrame, 'every frame was copied into the database file, by the worker (this connection never checkpoints)')
  t.equal((db.prepare('SELECT count(*) AS n FROM pages').get() as { n: bigint }).n, BigInt(Math.ceil(CHECKPOINT_FRAMES * 1.5)), 'and the rows read back')

  // The next commit restarts the WAL from its start; a few frames stay there.
  writePages(db, 10)
  await sleep(CHECKPOINT_POLL_MS * 6)
  const small = walState(file)
  t.ok(small.mxFrame > 0 && small.mxFrame < CHECKPOINT_FRAMES, `a restarted WAL of ${small.mxFrame} frames`)
  t.equal(small.nBackfill, 0, 'below the threshold: not checkpointed')
  t.ok(await lease.close() >= 1, 'the lease reports the checkpoints the worker ran')
})

t.test('two leases on one file: closing the first leaves the second checkpointing', async (t) => {
  const { file, db } = scratch(t)
  const first = checkpointInBackground(file)
  const second = checkpointInBackground(file)
  await first.close()
  writePages(db, CHECKPOINT_FRAMES + 100)
  const after = await backfilled(file, 5_000)
  t.equal(after.nBackfill, after.mxFrame, 'still checkpointed after the first lease closed')
  t.ok(await second.close() >= 1, 'the second lease saw the checkpoint')
  t.equal(await first.close(), 0, 'closing a lease again answers what its first close did (0: no checkpoint ran before it)')
})

t.test('the embedded store: its WAL is checkpointed below its own autocheckpoint', async (t) => {
  const backend = sqliteTestBackend()
  t.teardown(() => backend.cleanup())
  const store = await backend.open()
  if (store.backend.kind !== 'sqlite') throw new Error('expected the embedded store')
  const file = join(backend.location, 'gateway.db')
  const db = store.backend.db
  t.equal(db.pragma('wal_autocheckpoint', { simple: true }), 10_000n, 'the store\'s connection checkpoints only at 10,000 frames')
  db.exec('CREATE TABLE scratch_pages (id INTEGER PRIMARY KEY, body BLOB NOT NULL)')
  const insert = db.prepare('INSERT INTO scratch_pages (body) VALUES (?)')
  db.transaction(() => { for (let i = 0; i < CHECKPOINT_FRAMES + 200; i++) insert.run(Buffer.alloc(3900, 7)) })()
  const after = await backfilled(file, 5_000)
  t.ok(after.mxFrame > CHECKPOINT_FRAMES && after.mxFrame < 10_000, `the WAL held ${after.mxFrame} frames`)
  t.equal(after.nBackfill, after.mxFrame, 'and the worker copied them all')
})

t.test('the thread starts when a WAL first reaches CHECKPOINT_FRAMES, not when a store opens', (t) => {
  // In a process of its own: this file's other tests have started the thread already.
  const checkpointer = join(process.cwd(), '.test-build/plugins/foundation/store/sqlite/checkpointer.js')
  const store = join(process.cwd(), '.test-build/plugins/foundation/store/index.js')
  const locks = join(process.cwd(), '.test-build/test/helpers/locks.js')
  const walIndex = join(process.cwd(), '.test-build/test/helpers/wal-index.js')
  const dir = mkdtempSync(join(tmpdir(), 'gateway-checkpoint-lazy-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const source = `
    import { checkpointerStarted, CHECKPOINT_FRAMES, CHECKPOINT_POLL_MS } from ${JSON.stringify(checkpointer)}
    import { openStore } from ${JSON.stringify(store)}
    import { setTimeout as sleep } from 'node:timers/promises'
    import { lockHolder } from ${JSON.stringify(locks)}
    import { walState } from ${JSON.stringify(walIndex)}
    const store = await openStore({ dataDir: ${JSON.stringify(dir)}, secret: 'x'.repeat(64) })
    const account = await store.accounts.create({ name: 'short-lived' })
    await store.ledger.credit({ accountId: account.id, amount: 100n, kind: 'topup', postingId: 'lazy-1' })
    await sleep(CHECKPOINT_POLL_MS * 6)
    const short = checkpointerStarted()
    const db = store.backend.db
    db.exec('CREATE TABLE scratch_pages (id INTEGER PRIMARY KEY, body BLOB NOT NULL)')
    const insert = db.prepare('INSERT INTO scratch_pages (body) VALUES (?)')
    db.transaction(() => { for (let i = 0; i < CHECKPOINT_FRAMES + 200; i++) insert.run(Buffer.alloc(3900, 7)) })()
    // Until the worker has copied every frame (nBackfill = mxFrame in the wal-index header).
    const file = ${JSON.stringify(join(dir, 'gateway.db'))}
    const shm = file + '-shm'
    let copied = false
    for (let i = 0; i < 100 && !copied; i++) {
      await sleep(CHECKPOINT_POLL_MS)
      const wal = walState(file)
      copied = wal.mxFrame > CHECKPOINT_FRAMES && wal.nBackfill === wal.mxFrame
    }
    const long = checkpointerStarted()
    // SQLite's shared lock on the -shm file's DMS byte (offset 128 in its unix VFS), which tells a
    // process opening the database that the wal-index is in use. Closing any descriptor of the
    // file in this process would drop it.
    const dms = lockHolder(shm, 128, 1)
    await store.close()
    console.log(JSON.stringify({ short, long, copied, dmsHeld: dms === process.pid }))`
  const child = spawnSync(process.execPath, ['--input-type=module', '-e', source], { encoding: 'utf8', timeout: 20_000 })
  t.equal(child.status, 0, `the child ran (${child.stderr.trim().slice(0, 300)})`)
  const seen = JSON.parse(child.stdout.trim() || '{}') as { short?: boolean, long?: boolean, copied?: boolean, dmsHeld?: boolean }
  t.equal(seen.short, false, 'a store with a few commits: no thread')
  t.equal(seen.copied, true, 'its WAL past the threshold: every frame copied into the database file')
  t.equal(seen.long, true, 'by the thread, started then, and still running')
  t.equal(seen.dmsHeld, true, 'and SQLite\'s lock on the -shm file is still the process\'s (no descriptor of it was closed)')
  t.end()
})

t.test('the worker never keeps a process alive', (t) => {
  const module = join(process.cwd(), '.test-build/plugins/foundation/store/sqlite/checkpointer.js')
  const sqlite = join(process.cwd(), '.test-build/plugins/foundation/store/sqlite/sqlite-store.js')
  const dir = mkdtempSync(join(tmpdir(), 'gateway-checkpoint-exit-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  for (const [name, end] of [['a lease never closed', ''], ['a lease closed', 'await lease.close()']] as const) {
    // The WAL taken past the threshold, so that the thread is running when the script ends.
    const source = `
      import { checkpointInBackground, checkpointerStarted, CHECKPOINT_FRAMES } from ${JSON.stringify(module)}
      import { connectSqlite } from ${JSON.stringify(sqlite)}
      import { setTimeout as sleep } from 'node:timers/promises'
      const db = connectSqlite(${JSON.stringify(join(dir, `${end === '' ? 'open' : 'closed'}.db`))})
      db.exec('CREATE TABLE IF NOT EXISTS x (v BLOB)')
      const lease = checkpointInBackground(db.name)
      const insert = db.prepare('INSERT INTO x VALUES (?)')
      db.transaction(() => { for (let i = 0; i < CHECKPOINT_FRAMES + 50; i++) insert.run(Buffer.alloc(3900)) })()
      for (let i = 0; i < 200 && !checkpointerStarted(); i++) await sleep(10)
      const started = checkpointerStarted()
      ${end}
      console.log(started ? 'done' : 'no thread')`
    const started = Date.now()
    const child = spawnSync(process.execPath, ['--input-type=module', '-e', source], { encoding: 'utf8', timeout: 20_000 })
    t.equal(child.status, 0, `${name}: the process exits by itself (${child.stderr.trim().slice(0, 200)})`)
    t.equal(child.stdout.trim(), 'done', `${name}: after running to its end, the thread started`)
    t.ok(Date.now() - started < 10_000, `${name}: in ${Date.now() - started} ms`)
  }
  t.end()
})
