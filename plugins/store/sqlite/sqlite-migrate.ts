// SQLite migration runner. BEGIN IMMEDIATE takes the write lock before reading
// schema_migrations, so two processes opening one file apply each migration once.
import type { Database } from 'better-sqlite3'
import type { Clock } from '../clock.js'
import { type Migration, migrationChecksum, pendingMigrations } from '../migrate.js'

interface AppliedRow {
  version: bigint
  name: string
  checksum: string
}

/** Applies pending migrations; returns the versions applied by this call. */
export function runSqliteMigrations (db: Database, migrations: readonly Migration[], clock: Clock): number[] {
  const run = db.transaction((): number[] => {
    db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version INTEGER PRIMARY KEY,
      name TEXT NOT NULL,
      checksum TEXT NOT NULL,
      applied_at INTEGER NOT NULL
    ) STRICT`)
    const applied = db
      .prepare<[], AppliedRow>('SELECT version, name, checksum FROM schema_migrations')
      .safeIntegers(true)
      .all()
      .map((r) => ({ version: Number(r.version), name: r.name, checksum: r.checksum }))
    const record = db.prepare(
      'INSERT INTO schema_migrations (version, name, checksum, applied_at) VALUES (?, ?, ?, ?)'
    )
    const done: number[] = []
    for (const m of pendingMigrations(migrations, applied)) {
      db.exec(m.sql)
      record.run(m.version, m.name, migrationChecksum(m), clock.now().getTime())
      done.push(m.version)
    }
    return done
  })
  return run.immediate()
}
