// SQLite migration runner. BEGIN IMMEDIATE takes the write lock before reading
// schema_migrations, so two processes opening one file apply each migration once.
import type { Database } from 'better-sqlite3'
import type { Clock } from '../clock.js'
import { type AppliedMigration, type Migration, MigrationError, migrationChecksum, pendingMigrations } from '../migrate.js'

interface AppliedRow {
  version: bigint
  name: string
  checksum: string
}

interface ForeignKeyViolation {
  table: string
  parent: string
}

/** Dangling references a check reports, at most this many in the error. */
const VIOLATIONS_SHOWN = 5

function appliedMigrations (db: Database): AppliedMigration[] {
  return db
    .prepare<[], AppliedRow>('SELECT version, name, checksum FROM schema_migrations')
    .safeIntegers(true)
    .all()
    .map((r) => ({ version: Number(r.version), name: r.name, checksum: r.checksum }))
}

/**
 * Whether a migration that rebuilds tables may still be pending, read before the write lock:
 * the pragma that turns foreign keys off does nothing inside a transaction. Another process
 * can only apply migrations meanwhile, never undo them, so a migration this finds applied is
 * still applied under the lock; one it finds pending may be applied by then, which costs only
 * the foreign key check of a run that had nothing to rebuild.
 */
function rebuildPending (db: Database, migrations: readonly Migration[]): boolean {
  if (!migrations.some((m) => m.rebuildsTables === true)) return false
  const table = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'").get()
  const applied = table === undefined ? [] : appliedMigrations(db)
  return pendingMigrations(migrations, applied).some((m) => m.rebuildsTables === true)
}

/** Applies pending migrations; returns the versions applied by this call. */
export function runSqliteMigrations (db: Database, migrations: readonly Migration[], clock: Clock): number[] {
  const rebuild = rebuildPending(db, migrations)
  const run = db.transaction((): number[] => {
    db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version INTEGER PRIMARY KEY,
      name TEXT NOT NULL,
      checksum TEXT NOT NULL,
      applied_at INTEGER NOT NULL
    ) STRICT`)
    const record = db.prepare(
      'INSERT INTO schema_migrations (version, name, checksum, applied_at) VALUES (?, ?, ?, ?)'
    )
    const done: number[] = []
    for (const m of pendingMigrations(migrations, appliedMigrations(db))) {
      db.exec(m.sql)
      record.run(m.version, m.name, migrationChecksum(m), clock.now().getTime())
      done.push(m.version)
    }
    // Every migration of this transaction ran with foreign keys off: a reference one of them
    // left dangling fails the whole run here, and the rollback leaves the database as it was.
    if (rebuild && done.length > 0) checkForeignKeys(db)
    return done
  })
  if (!rebuild) return run.immediate()
  // https://www.sqlite.org/lang_altertable.html, "Making Other Kinds Of Table Schema Changes":
  // foreign keys off outside the transaction, checked before it commits, back on after.
  const enforced = Number(db.pragma('foreign_keys', { simple: true })) === 1
  db.pragma('foreign_keys = OFF')
  try {
    if (Number(db.pragma('foreign_keys', { simple: true })) !== 0) {
      throw new MigrationError('a migration that rebuilds tables cannot run inside an open transaction (foreign keys stay on)')
    }
    return run.immediate()
  } finally {
    if (enforced) db.pragma('foreign_keys = ON')
  }
}

function checkForeignKeys (db: Database): void {
  const violations = db.prepare<[], ForeignKeyViolation>('PRAGMA foreign_key_check').all()
  if (violations.length === 0) return
  const shown = violations.slice(0, VIOLATIONS_SHOWN).map((v) => `${v.table} → ${v.parent}`).join(', ')
  throw new MigrationError(
    `migrations left ${violations.length} rows referencing rows that do not exist (${shown}); rolled back`
  )
}
