import type { Pool } from 'pg'
import type { JobHold, JobHoldStore } from './types.js'

interface Row { job_ref: string, hold_id: string, account_id: string, model_id: string, created_at: Date }

export function createPgJobHoldStore (pool: Pool): JobHoldStore {
  return {
    async record (j: JobHold) {
      await pool.query(
        'INSERT INTO job_holds (job_ref, hold_id, account_id, model_id, created_at) VALUES ($1, $2, $3, $4, $5) ON CONFLICT (job_ref) DO NOTHING',
        [j.jobRef, j.holdId, j.accountId, j.modelId, j.createdAt]
      )
    },
    async take (jobRef) {
      const r = await pool.query<Row>('DELETE FROM job_holds WHERE job_ref = $1 RETURNING job_ref, hold_id, account_id, model_id, created_at', [jobRef])
      const row = r.rows[0]
      return row ? { jobRef: row.job_ref, holdId: row.hold_id, accountId: row.account_id, modelId: row.model_id, createdAt: row.created_at } : null
    }
  }
}
