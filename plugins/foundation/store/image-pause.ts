// The platform image pause switched by the admin API (POST/DELETE /admin/v1/images/pause):
// one row per paused UTC day in the database every instance shares, so a pause reaches every
// instance (each reads it through a short cache, plugins/concerns/caps). It ends by itself at 00:00 UTC:
// the next day has no row.
import type { StoreBackend } from './types.js'

export interface ImagePauseStore {
  /** Whether image generation is paused on the UTC day (YYYY-MM-DD). */
  isPaused(day: string): Promise<boolean>
  /** Pauses the UTC day (idempotent). */
  pause(day: string, now: Date): Promise<void>
  /** Lifts the pause of the UTC day (idempotent). Answers whether there was one. */
  resume(day: string): Promise<boolean>
}

export function createImagePauseStore (backend: StoreBackend): ImagePauseStore {
  if (backend.kind === 'sqlite') {
    const db = backend.db
    const get = db.prepare<[string], { day: string }>('SELECT day FROM image_pauses WHERE day = ?')
    const put = db.prepare<[string, number]>('INSERT INTO image_pauses (day, created_at) VALUES (?, ?) ON CONFLICT (day) DO NOTHING')
    const del = db.prepare<[string]>('DELETE FROM image_pauses WHERE day = ?')
    return {
      async isPaused (day) { return get.get(day) !== undefined },
      async pause (day, now) { put.run(day, now.getTime()) },
      async resume (day) { return del.run(day).changes > 0 },
    }
  }
  const pool = backend.pool
  return {
    async isPaused (day) {
      return ((await pool.query('SELECT 1 FROM image_pauses WHERE day = $1', [day])).rowCount ?? 0) > 0
    },
    async pause (day, now) {
      await pool.query('INSERT INTO image_pauses (day, created_at) VALUES ($1, $2) ON CONFLICT (day) DO NOTHING', [day, now])
    },
    async resume (day) {
      return ((await pool.query('DELETE FROM image_pauses WHERE day = $1', [day])).rowCount ?? 0) > 0
    },
  }
}
