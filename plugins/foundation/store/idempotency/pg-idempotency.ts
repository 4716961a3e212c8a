import type { Pool } from 'pg'
import type { Clock } from '../clock.js'
import { statusOf, type Existing } from './status.js'
import type { IdempotencyStore } from './types.js'

/** How often a claim retries after the row it met vanished in between (released or purged). */
const CLAIM_ATTEMPTS = 3

const CLAIM = `
INSERT INTO idempotency_keys AS k (account_id, idem_key, fingerprint, owner, state, created_at, expires_at)
VALUES ($1, $2, $3, $4, 'running', $5, $6)
ON CONFLICT (account_id, idem_key) DO UPDATE
  SET fingerprint = EXCLUDED.fingerprint, owner = EXCLUDED.owner, state = 'running',
      created_at = EXCLUDED.created_at, expires_at = EXCLUDED.expires_at
  WHERE k.expires_at <= $5
RETURNING owner`

export function createPgIdempotencyStore (pool: Pool, clock: Clock): IdempotencyStore {
  return {
    async claim (c, leaseMs) {
      for (let attempt = 0; attempt < CLAIM_ATTEMPTS; attempt++) {
        const now = clock.now()
        const won = await pool.query(CLAIM, [c.accountId, c.key, c.fingerprint, c.owner, now, new Date(now.getTime() + leaseMs)])
        if (won.rowCount === 1) return 'claimed'
        const found = await pool.query<Existing>('SELECT fingerprint, state FROM idempotency_keys WHERE account_id = $1 AND idem_key = $2', [c.accountId, c.key])
        const row = found.rows[0]
        if (row !== undefined) return statusOf(row, c.fingerprint)
      }
      // The key keeps changing hands under us: report it busy, the client retries later.
      return 'in_progress'
    },
    async renew (owners, leaseMs) {
      if (owners.length === 0) return 0
      const until = new Date(clock.now().getTime() + leaseMs)
      const r = await pool.query("UPDATE idempotency_keys SET expires_at = $1 WHERE state = 'running' AND owner = ANY($2::text[])", [until, owners])
      return r.rowCount ?? 0
    },
    async complete (owner, retainMs, jobId) {
      const until = new Date(clock.now().getTime() + retainMs)
      const r = await pool.query("UPDATE idempotency_keys SET state = 'done', expires_at = $1, job_id = COALESCE($3, job_id) WHERE owner = $2 AND state = 'running'", [until, owner, jobId ?? null])
      return r.rowCount === 1
    },
    async linkJob (owner, jobId, retainMs) {
      const until = new Date(clock.now().getTime() + retainMs)
      const r = await pool.query("UPDATE idempotency_keys SET state = 'done', expires_at = $1, job_id = $3 WHERE owner = $2 AND state = 'running'", [until, owner, jobId])
      return r.rowCount === 1
    },
    async original (accountId, key) {
      const r = await pool.query<{ owner: string, job_id: string | null }>(
        'SELECT owner, job_id FROM idempotency_keys WHERE account_id = $1 AND idem_key = $2 AND expires_at > $3', [accountId, key, clock.now()])
      const row = r.rows[0]
      return row === undefined ? null : { requestId: row.owner, jobId: row.job_id }
    },
    async release (owner) {
      const r = await pool.query("DELETE FROM idempotency_keys WHERE owner = $1 AND state = 'running'", [owner])
      return r.rowCount === 1
    },
    async purge () {
      const r = await pool.query('DELETE FROM idempotency_keys WHERE expires_at <= $1', [clock.now()])
      return r.rowCount ?? 0
    }
  }
}
