import type { Database } from 'better-sqlite3'
import type { JobHoldStore } from './types.js'

interface Row { job_ref: string, hold_id: string, account_id: string, model_id: string, created_at: bigint }

export function createSqliteJobHoldStore (db: Database): JobHoldStore {
  const insert = db.prepare('INSERT INTO job_holds (job_ref, hold_id, account_id, model_id, created_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT (job_ref) DO NOTHING')
  const take = db.prepare('DELETE FROM job_holds WHERE job_ref = ? RETURNING job_ref, hold_id, account_id, model_id, created_at')
  return {
    async record (j) {
      insert.run(j.jobRef, j.holdId, j.accountId, j.modelId, j.createdAt.getTime())
    },
    async take (jobRef) {
      const row = take.get(jobRef) as Row | undefined
      return row ? { jobRef: row.job_ref, holdId: row.hold_id, accountId: row.account_id, modelId: row.model_id, createdAt: new Date(Number(row.created_at)) } : null
    }
  }
}
