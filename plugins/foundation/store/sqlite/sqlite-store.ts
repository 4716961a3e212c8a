import { closeSync, mkdirSync, openSync } from 'node:fs'
import { join } from 'node:path'
import { PRIVATE_FILE_MODE, PRIVATE_DIR_MODE, restrictFile } from '../../keys/private-files.js'
import Database from 'better-sqlite3'
import type { StoreContext } from '../context.js'
import { createSqliteJobStore } from '../jobs/sqlite-jobs.js'
import type { JobStore } from '../jobs/types.js'
import { createSqliteIdempotencyStore } from '../idempotency/sqlite-idempotency.js'
import type { IdempotencyStore } from '../idempotency/types.js'
import { createSqliteLedgerStore } from '../ledger/sqlite-ledger.js'
import type { LedgerStore } from '../ledger/types.js'
import { sqliteMigrations } from '../migrations/sqlite/index.js'
import { createSqliteRequestLogStore } from '../request-log/sqlite-request-log.js'
import type { RequestLogStore } from '../request-log/types.js'
import type { AccountStore, KeyStore, StoreBackend } from '../types.js'
import { createSqliteAccountStore } from './sqlite-accounts.js'
import { createSqliteKeyStore } from './sqlite-keys.js'
import { runSqliteMigrations } from './sqlite-migrate.js'
import { checkpointInBackground } from './checkpointer.js'

export const SQLITE_FILE_NAME = 'gateway.db'
const BUSY_TIMEOUT_MS = 5000
const WAL_AUTOCHECKPOINT_PAGES = 10_000

export interface SqliteParts {
  backend: StoreBackend
  accounts: AccountStore
  keys: KeyStore
  requestLog: RequestLogStore
  ledger: LedgerStore
  jobs: JobStore
  idempotency: IdempotencyStore
  close(): Promise<void>
}

/** A connection to the database file, set up as the store sets up its own (migrations not run). */
export function connectSqlite (file: string): Database.Database {
  const db = new Database(file)
  try {
    // First, so a second process switching to WAL or migrating waits instead of failing.
    db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`)
    // WAL + NORMAL: readers never block the writer and a commit costs no fsync; a
    // power loss may drop the last commits but never corrupts the file.
    db.pragma('journal_mode = WAL')
    db.pragma('synchronous = NORMAL')
    // The backstop: a checkpoint (the WAL's pages copied into the database file, and two
    // fsyncs) runs inside the commit that takes the WAL past this many pages, on the event loop.
    // A store's WAL is checkpointed long before, by the worker of checkpointer.ts (at 1,000
    // frames, off the event loop; a process starts that thread when a WAL first gets there); this
    // bound holds when that worker is gone or behind. SQLite's default, 1,000 pages, is about 120 billed
    // requests at one connection and 500 at 50 (8.2 and 1.9 WAL pages a request, measured):
    // many stalls a second on a connection that checkpoints itself. At 10,000 the WAL file
    // grows to about 40 MB before it is reused.
    db.pragma(`wal_autocheckpoint = ${WAL_AUTOCHECKPOINT_PAGES}`)
    db.pragma('foreign_keys = ON')
    // Money columns exceed 2^53; read every INTEGER as bigint and convert the rest.
    db.defaultSafeIntegers(true)
    return db
  } catch (err) {
    db.close()
    throw err
  }
}

/**
 * Creates the database file with the owner-only mode when it does not exist yet. One that exists
 * is not opened: closing any descriptor of a file drops every POSIX lock the process holds on it,
 * so opening and closing it here would take SQLite's locks from a connection this process
 * already has to it (https://www.sqlite.org/howtocorrupt.html, 2.2).
 */
function createPrivately (file: string): void {
  try {
    closeSync(openSync(file, 'wx', PRIVATE_FILE_MODE))
  } catch (err) {
    if (!(err instanceof Error && 'code' in err && err.code === 'EEXIST')) throw err
  }
}

export function openSqlite (dataDir: string, ctx: StoreContext): SqliteParts {
  // Keys (sealed), balances and the request log live here: owner only. SQLite gives the -wal
  // and -shm files the mode of the database file, so creating that one 0600 covers all three.
  mkdirSync(dataDir, { recursive: true, mode: PRIVATE_DIR_MODE })
  const file = join(dataDir, SQLITE_FILE_NAME)
  createPrivately(file)
  for (const name of [file, `${file}-wal`, `${file}-shm`]) restrictFile(name)
  const db = connectSqlite(file)
  try {
    runSqliteMigrations(db, sqliteMigrations, ctx.clock)
  } catch (err) {
    db.close()
    throw err
  }
  const ledger = createSqliteLedgerStore(db, ctx)
  // The worker takes over once the WAL is long enough to need it (checkpointer.ts); until then,
  // or without it, the connection's autocheckpoint (above) is all there is.
  const checkpoints = checkpointInBackground(file)
  return {
    backend: { kind: 'sqlite', db },
    accounts: createSqliteAccountStore(db, ctx),
    keys: createSqliteKeyStore(db, ctx),
    requestLog: createSqliteRequestLogStore(db),
    ledger,
    jobs: createSqliteJobStore(db),
    idempotency: createSqliteIdempotencyStore(db, ctx.clock),
    // Queued holds and settles are answered before the database goes.
    close: async () => {
      await ledger.close()
      await checkpoints.close()
      db.close()
    },
  }
}
