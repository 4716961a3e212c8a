// PostgreSQL migration runner. Instances starting together serialise on an advisory
// lock (scoped to the schema), so each migration runs exactly once, each in its own
// transaction.
import { createHash } from 'node:crypto'
import type { Pool, PoolClient } from 'pg'
import { type Migration, migrationChecksum, pendingMigrations } from '../migrate.js'

export const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/

/** Same schema → same lock; different schemas (parallel test files) do not wait on each other. */
export function migrationLockKey (schema: string | undefined): string {
  const digest = createHash('sha256').update(`model-gateway:migrations:${schema ?? ''}`).digest()
  return digest.readBigInt64BE(0).toString()
}

interface AppliedRow {
  version: number
  name: string
  checksum: string
}

/** Applies pending migrations; returns the versions applied by this call. */
export async function runPgMigrations (
  pool: Pool,
  migrations: readonly Migration[],
  schema: string | undefined
): Promise<number[]> {
  const client = await pool.connect()
  let broken: Error | undefined
  const lockKey = migrationLockKey(schema)
  try {
    await client.query('SELECT pg_advisory_lock($1)', [lockKey])
    try {
      return await migrateLocked(client, migrations, schema)
    } finally {
      await client.query('SELECT pg_advisory_unlock($1)', [lockKey])
    }
  } catch (err) {
    broken = err instanceof Error ? err : new Error(String(err))
    throw err
  } finally {
    // A client that failed mid-run may still hold the lock or a transaction: drop it.
    client.release(broken)
  }
}

async function migrateLocked (
  client: PoolClient,
  migrations: readonly Migration[],
  schema: string | undefined
): Promise<number[]> {
  if (schema !== undefined) {
    // Inside the lock: concurrent CREATE SCHEMA IF NOT EXISTS can still collide.
    await client.query(`CREATE SCHEMA IF NOT EXISTS "${schema}"`)
  }
  await client.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
    version INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    checksum TEXT NOT NULL,
    applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
  )`)
  const { rows } = await client.query<AppliedRow>('SELECT version, name, checksum FROM schema_migrations')
  const done: number[] = []
  for (const m of pendingMigrations(migrations, rows)) {
    await client.query('BEGIN')
    try {
      await client.query(m.sql)
      await client.query('INSERT INTO schema_migrations (version, name, checksum) VALUES ($1, $2, $3)', [
        m.version,
        m.name,
        migrationChecksum(m),
      ])
      await client.query('COMMIT')
    } catch (err) {
      await client.query('ROLLBACK').catch(() => {})
      throw err
    }
    done.push(m.version)
  }
  return done
}
