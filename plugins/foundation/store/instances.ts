// The live gateway instances on one database and the config each serves: every instance upserts
// its row (plugins/apps/server/reload.ts: at start, after a reload, every heartbeat), deletes it when
// it stops; GET /admin/v1/instances lists the rows seen within a TTL, so an instance that died
// without deleting its row drops out of the list by itself.
import type { StoreBackend } from './types.js'

export interface InstanceRow {
  id: string
  host: string
  pid: number
  /** sha256 of the config the instance serves (as `check` and /readyz show it). */
  configHash: string
  /** When its config was last swapped by a reload, or null. */
  reloadedAt: Date | null
  startedAt: Date
  seenAt: Date
}

export interface InstanceStore {
  /** Inserts or replaces the instance's row. */
  upsert(row: InstanceRow): Promise<void>
  /** Rows seen at or after `since`, oldest start first. */
  list(since: Date): Promise<InstanceRow[]>
  remove(id: string): Promise<void>
}

interface SqliteRow { id: string, host: string, pid: number | bigint, config_hash: string, reloaded_at: number | bigint | null, started_at: number | bigint, seen_at: number | bigint }
interface PgRow { id: string, host: string, pid: number, config_hash: string, reloaded_at: Date | null, started_at: Date, seen_at: Date }

const UPSERT_SET = 'host = excluded.host, pid = excluded.pid, config_hash = excluded.config_hash, reloaded_at = excluded.reloaded_at, started_at = excluded.started_at, seen_at = excluded.seen_at'
const COLUMNS = 'id, host, pid, config_hash, reloaded_at, started_at, seen_at'

export function createInstanceStore (backend: StoreBackend): InstanceStore {
  if (backend.kind === 'sqlite') {
    const db = backend.db
    const put = db.prepare<[string, string, number, string, number | null, number, number]>(
      `INSERT INTO gateway_instances (${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET ${UPSERT_SET}`)
    const select = db.prepare<[number], SqliteRow>(`SELECT ${COLUMNS} FROM gateway_instances WHERE seen_at >= ? ORDER BY started_at, id`)
    const del = db.prepare<[string]>('DELETE FROM gateway_instances WHERE id = ?')
    return {
      async upsert (r) { put.run(r.id, r.host, r.pid, r.configHash, r.reloadedAt?.getTime() ?? null, r.startedAt.getTime(), r.seenAt.getTime()) },
      async list (since) {
        return select.all(since.getTime()).map((r) => ({
          id: r.id,
          host: r.host,
          pid: Number(r.pid),
          configHash: r.config_hash,
          reloadedAt: r.reloaded_at === null ? null : new Date(Number(r.reloaded_at)),
          startedAt: new Date(Number(r.started_at)),
          seenAt: new Date(Number(r.seen_at))
        }))
      },
      async remove (id) { del.run(id) }
    }
  }
  const pool = backend.pool
  return {
    async upsert (r) {
      await pool.query(`INSERT INTO gateway_instances (${COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (id) DO UPDATE SET ${UPSERT_SET}`,
        [r.id, r.host, r.pid, r.configHash, r.reloadedAt, r.startedAt, r.seenAt])
    },
    async list (since) {
      const { rows } = await pool.query<PgRow>(`SELECT ${COLUMNS} FROM gateway_instances WHERE seen_at >= $1 ORDER BY started_at, id`, [since])
      return rows.map((r) => ({ id: r.id, host: r.host, pid: r.pid, configHash: r.config_hash, reloadedAt: r.reloaded_at, startedAt: r.started_at, seenAt: r.seen_at }))
    },
    async remove (id) { await pool.query('DELETE FROM gateway_instances WHERE id = $1', [id]) }
  }
}
