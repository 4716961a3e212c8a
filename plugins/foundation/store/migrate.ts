// Backend-neutral part of the migration runner. Each backend keeps an ordered list
// of SQL migrations (migrations/sqlite, migrations/pg); later plugins append 002+.
import { createHash } from 'node:crypto'

export interface Migration {
  /** Strictly increasing, never reused. */
  version: number
  /** kebab-case, matches the file name `NNN-name.ts`. */
  name: string
  /** One or more statements, run in one transaction. Never edit once released. */
  sql: string
  /**
   * SQLite only: the migration rebuilds tables others reference (create the new table, copy,
   * drop the old one, rename), which cannot run with foreign keys enforced. The SQLite runner
   * turns them off before its transaction, checks every reference before it commits, and turns
   * them back on after. Not part of the checksum: it changes how the SQL runs, not what it does.
   */
  rebuildsTables?: boolean
}

export interface AppliedMigration {
  version: number
  name: string
  checksum: string
}

export class MigrationError extends Error {
  override readonly name = 'MigrationError'
}

export function migrationChecksum (migration: Migration): string {
  return createHash('sha256').update(migration.sql.trim()).digest('hex')
}

/** Throws on a malformed list: duplicate or unordered versions are a code bug. */
export function checkMigrationList (migrations: readonly Migration[]): void {
  let previous = 0
  for (const m of migrations) {
    if (!Number.isInteger(m.version) || m.version <= previous) {
      throw new MigrationError(`migration ${m.version}-${m.name} is out of order (after ${previous})`)
    }
    previous = m.version
  }
}

/**
 * The migrations still to run, after checking that what the database already ran is
 * what this code would run: an edited migration means databases silently differ.
 * Versions in the database that this code does not know are ignored, so an older
 * instance can still start during a rolling deploy.
 */
export function pendingMigrations (
  migrations: readonly Migration[],
  applied: readonly AppliedMigration[]
): Migration[] {
  checkMigrationList(migrations)
  const done = new Map(applied.map((a) => [a.version, a]))
  for (const m of migrations) {
    const row = done.get(m.version)
    if (row && row.checksum !== migrationChecksum(m)) {
      throw new MigrationError(
        `migration ${m.version}-${m.name} differs from the one applied to this database ` +
          `(${row.name}); released migrations must not be edited, add a new one`
      )
    }
  }
  return migrations.filter((m) => !done.has(m.version))
}
