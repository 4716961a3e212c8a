import type { Database } from 'better-sqlite3'
import type { Clock } from '../clock.js'
import { statusOf, type Existing } from './status.js'
import type { IdempotencyStore } from './types.js'

export function createSqliteIdempotencyStore (db: Database, clock: Clock): IdempotencyStore {
  // One statement: the database file's write lock makes it atomic across processes.
  const claim = db.prepare(`
INSERT INTO idempotency_keys (account_id, idem_key, fingerprint, owner, state, created_at, expires_at)
VALUES (?, ?, ?, ?, 'running', ?, ?)
ON CONFLICT (account_id, idem_key) DO UPDATE
  SET fingerprint = excluded.fingerprint, owner = excluded.owner, state = 'running',
      created_at = excluded.created_at, expires_at = excluded.expires_at
  WHERE idempotency_keys.expires_at <= excluded.created_at
RETURNING owner`)
  const existing = db.prepare('SELECT fingerprint, state FROM idempotency_keys WHERE account_id = ? AND idem_key = ?')
  const renew = db.prepare("UPDATE idempotency_keys SET expires_at = ? WHERE state = 'running' AND owner IN (SELECT value FROM json_each(?))")
  const complete = db.prepare("UPDATE idempotency_keys SET state = 'done', expires_at = ?, job_id = COALESCE(?, job_id) WHERE owner = ? AND state = 'running'")
  const linkJob = db.prepare("UPDATE idempotency_keys SET state = 'done', expires_at = ?, job_id = ? WHERE owner = ? AND state = 'running'")
  const original = db.prepare<[string, string, number], { owner: string, job_id: string | null }>('SELECT owner, job_id FROM idempotency_keys WHERE account_id = ? AND idem_key = ? AND expires_at > ?')
  const release = db.prepare("DELETE FROM idempotency_keys WHERE owner = ? AND state = 'running'")
  const purge = db.prepare('DELETE FROM idempotency_keys WHERE expires_at <= ?')
  // The claim and the read of what it met run in one transaction: nothing changes in between.
  const claimTx = db.transaction((accountId: string, key: string, fingerprint: string, owner: string, now: number, until: number) => {
    if (claim.get(accountId, key, fingerprint, owner, now, until) !== undefined) return 'claimed' as const
    const row = existing.get(accountId, key) as Existing | undefined
    // Unreachable (the insert met this row under the same lock); busy is the safe answer.
    return row === undefined ? 'in_progress' as const : statusOf(row, fingerprint)
  })
  return {
    async claim (c, leaseMs) {
      const now = clock.now().getTime()
      return claimTx.immediate(c.accountId, c.key, c.fingerprint, c.owner, now, now + leaseMs)
    },
    async renew (owners, leaseMs) {
      if (owners.length === 0) return 0
      return renew.run(clock.now().getTime() + leaseMs, JSON.stringify(owners)).changes
    },
    async complete (owner, retainMs, jobId) {
      return complete.run(clock.now().getTime() + retainMs, jobId ?? null, owner).changes === 1
    },
    async linkJob (owner, jobId, retainMs) {
      return linkJob.run(clock.now().getTime() + retainMs, jobId, owner).changes === 1
    },
    async original (accountId, key) {
      const row = original.get(accountId, key, clock.now().getTime())
      return row === undefined ? null : { requestId: row.owner, jobId: row.job_id }
    },
    async release (owner) {
      return release.run(owner).changes === 1
    },
    async purge () {
      return purge.run(clock.now().getTime()).changes
    }
  }
}
