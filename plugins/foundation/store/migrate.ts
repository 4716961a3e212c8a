// Backend-neutral part of the migration runner. Each backend has a folder of SQL migrations
// (migrations/sqlite, migrations/pg), one file each, read in version order (migrationsIn).
import { createHash } from 'node:crypto'
import { readdirSync } from 'node:fs'

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

/** A migration file's name: `NNN-kebab-name` with its extension (.ts run by tsx, .js built). */
const MIGRATION_FILE = /^(\d{3})-([a-z0-9]+(?:-[a-z0-9]+)*)\.(?:ts|js)$/

/**
 * The migrations of one backend's folder, in version order: every `NNN-name.ts` file there, each
 * exporting one Migration whose version and name are its file's. A new migration is a file in
 * each backend's folder and nothing else; a file whose export does not match its name, two
 * files with one version, or a version missing from the sequence is a code bug, thrown at load.
 */
export async function migrationsIn (folder: URL): Promise<readonly Migration[]> {
  // A declaration or source map beside a built file (`017-x.d.ts`, `017-x.js.map`) is no match.
  const files = readdirSync(folder).filter((f) => MIGRATION_FILE.test(f)).sort()
  const migrations: Migration[] = []
  for (const file of files) {
    const [, number, name] = MIGRATION_FILE.exec(file) as RegExpExecArray
    const exported = Object.values(await import(new URL(file, folder).href) as Record<string, unknown>)
    if (exported.length !== 1) throw new MigrationError(`migration file ${file} must export exactly one migration (it exports ${exported.length})`)
    const m = exported[0] as Migration
    if (m.version !== Number(number) || m.name !== name) {
      throw new MigrationError(`migration file ${file} exports ${String(m.version)}-${String(m.name)}; a file's migration carries its number and name`)
    }
    if (m.version !== migrations.length + 1) throw new MigrationError(`migration ${file} follows ${migrations.length}: versions run 1, 2, 3… without a gap or a repeat`)
    migrations.push(m)
  }
  return migrations
}
