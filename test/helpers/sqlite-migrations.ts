// What the SQLite migration tests share: a database directory removed after the test, a table's
// rows in a fixed order.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type Database from 'better-sqlite3'
import type { Test } from 'tap'

/** A temporary directory for a database file, removed when the test ends. */
export function tempDir (t: Test, prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

/** Every row of `table`, every column, ordered by `key` (a column list). */
export const tableRows = (db: Database.Database, table: string, key: string): unknown[] =>
  db.prepare(`SELECT * FROM ${table} ORDER BY ${key}`).all()
