import type { Pool } from 'pg'
import type { JobKind, JobRecord, JobState, JobStore } from './types.js'

interface Row {
  id: string
  kind: string
  upstream_id: string
  account_id: string
  key_id: string
  model_id: string
  provider: string
  price: string
  hold_id: string
  request_id: string
  state: string
  upstream_status: string | null
  checks: number
  next_check_at: Date
  claimed_until: Date | null
  created_at: Date
  finished_at: Date | null
}

function toRecord (r: Row): JobRecord {
  return {
    id: r.id,
    kind: r.kind as JobKind,
    upstreamId: r.upstream_id,
    accountId: r.account_id,
    keyId: r.key_id,
    modelId: r.model_id,
    provider: r.provider,
    price: BigInt(r.price),
    holdId: r.hold_id,
    requestId: r.request_id,
    state: r.state as JobState,
    upstreamStatus: r.upstream_status,
    checks: r.checks,
    nextCheckAt: r.next_check_at,
    claimedUntil: r.claimed_until,
    createdAt: r.created_at,
    finishedAt: r.finished_at
  }
}

export function createPgJobStore (pool: Pool): JobStore {
  return {
    async create (j) {
      const r = await pool.query(
        `INSERT INTO jobs (id, kind, upstream_id, account_id, key_id, model_id, provider, price, hold_id, request_id, next_check_at, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) ON CONFLICT (provider, kind, upstream_id) DO NOTHING`,
        [j.id, j.kind, j.upstreamId, j.accountId, j.keyId, j.modelId, j.provider, j.price.toString(), j.holdId, j.requestId, j.nextCheckAt, j.createdAt]
      )
      return r.rowCount === 1
    },
    async getOwned (id, accountId) {
      const r = await pool.query<Row>('SELECT * FROM jobs WHERE id = $1 AND account_id = $2', [id, accountId])
      const row = r.rows[0]
      return row ? toRecord(row) : null
    },
    async finish (id, state: Exclude<JobState, 'pending'>, upstreamStatus, now) {
      const r = await pool.query<Row>(
        `UPDATE jobs SET state = $1, upstream_status = coalesce($2, upstream_status), finished_at = $3, claimed_until = NULL
         WHERE id = $4 AND state = 'pending' RETURNING *`,
        [state, upstreamStatus, now, id]
      )
      const row = r.rows[0]
      return row ? toRecord(row) : null
    },
    async claimDue (now, leaseMs, limit) {
      // SKIP LOCKED: a row another instance is claiming right now is passed over, not waited
      // for; the claimed_until lease then keeps it out of every other claim until it ends.
      const r = await pool.query<Row>(
        `UPDATE jobs SET claimed_until = $2
         WHERE id IN (SELECT id FROM jobs WHERE state = 'pending' AND next_check_at <= $1 AND (claimed_until IS NULL OR claimed_until <= $1)
                      ORDER BY next_check_at LIMIT $3 FOR UPDATE SKIP LOCKED)
         RETURNING *`,
        [now, new Date(now.getTime() + leaseMs), limit]
      )
      return r.rows.map(toRecord).sort((a, b) => a.nextCheckAt.getTime() - b.nextCheckAt.getTime())
    },
    async reschedule (id, nextCheckAt, upstreamStatus) {
      await pool.query(
        `UPDATE jobs SET next_check_at = $1, checks = checks + 1, upstream_status = coalesce($2, upstream_status), claimed_until = NULL
         WHERE id = $3 AND state = 'pending'`,
        [nextCheckAt, upstreamStatus, id]
      )
    }
  }
}
