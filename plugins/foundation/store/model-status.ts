// Model statuses set by the admin API (publish, pause, retire, unpublish): one row per model
// whose status overrides gateway.yaml's, in the database every instance shares, so a switch
// reaches every instance (each reads the whole table through a short cache, plugins/concerns/models).
// Clearing a row hands the model back to its configured status.
import type { ModelStatus } from '../config/types.js'
import type { StoreBackend } from './types.js'

export interface StoredModelStatus {
  status: ModelStatus
  updatedAt: Date
}

export interface ModelStatusStore {
  /** Every stored override, by model id. One query, whatever the number of models. */
  list(): Promise<ReadonlyMap<string, StoredModelStatus>>
  /** Stores the model's status (replaces an earlier one). */
  set(modelId: string, status: ModelStatus, now: Date): Promise<void>
  /** Drops the model's override. Answers whether there was one. */
  clear(modelId: string): Promise<boolean>
}

const STATUSES: ReadonlySet<string> = new Set<ModelStatus>(['draft', 'active', 'paused', 'retired'])

function statusOf (value: string): ModelStatus {
  // The table's CHECK holds the same list; anything else is a database edited by hand.
  if (!STATUSES.has(value)) throw new Error(`model_status holds an unknown status ${JSON.stringify(value)}`)
  return value as ModelStatus
}

interface Row {
  model_id: string
  status: string
  /** SQLite: ms since the epoch (a bigint: the connection reads integers safely); PostgreSQL: a Date. */
  updated_at: bigint | number | Date
}

function toMap (rows: readonly Row[]): ReadonlyMap<string, StoredModelStatus> {
  return new Map(rows.map((r) => [r.model_id, { status: statusOf(r.status), updatedAt: r.updated_at instanceof Date ? r.updated_at : new Date(Number(r.updated_at)) }]))
}

export function createModelStatusStore (backend: StoreBackend): ModelStatusStore {
  if (backend.kind === 'sqlite') {
    const db = backend.db
    const all = db.prepare<[], Row>('SELECT model_id, status, updated_at FROM model_status')
    const put = db.prepare<[string, string, number]>(
      'INSERT INTO model_status (model_id, status, updated_at) VALUES (?, ?, ?) ON CONFLICT (model_id) DO UPDATE SET status = excluded.status, updated_at = excluded.updated_at')
    const del = db.prepare<[string]>('DELETE FROM model_status WHERE model_id = ?')
    return {
      async list () { return toMap(all.all()) },
      async set (modelId, status, now) { put.run(modelId, status, now.getTime()) },
      async clear (modelId) { return del.run(modelId).changes > 0 },
    }
  }
  const pool = backend.pool
  return {
    async list () {
      return toMap((await pool.query<Row>('SELECT model_id, status, updated_at FROM model_status')).rows)
    },
    async set (modelId, status, now) {
      await pool.query(
        'INSERT INTO model_status (model_id, status, updated_at) VALUES ($1, $2, $3) ON CONFLICT (model_id) DO UPDATE SET status = EXCLUDED.status, updated_at = EXCLUDED.updated_at',
        [modelId, status, now])
    },
    async clear (modelId) {
      return ((await pool.query('DELETE FROM model_status WHERE model_id = $1', [modelId])).rowCount ?? 0) > 0
    },
  }
}
