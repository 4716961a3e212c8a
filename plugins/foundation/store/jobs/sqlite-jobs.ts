import type { Database } from 'better-sqlite3'
import type { JobKind, JobRecord, JobState, JobStore } from './types.js'

interface Row {
  id: string
  kind: string
  upstream_id: string
  account_id: string
  key_id: string
  model_id: string
  provider: string
  price: bigint
  hold_id: string
  request_id: string
  state: string
  upstream_status: string | null
  checks: bigint
  next_check_at: bigint
  claimed_until: bigint | null
  created_at: bigint
  finished_at: bigint | null
}

const date = (ms: bigint): Date => new Date(Number(ms))

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
    checks: Number(r.checks),
    nextCheckAt: date(r.next_check_at),
    claimedUntil: r.claimed_until === null ? null : date(r.claimed_until),
    createdAt: date(r.created_at),
    finishedAt: r.finished_at === null ? null : date(r.finished_at)
  }
}

/** SQLite has one writer at a time, so an UPDATE … RETURNING over the due rows is the claim. */
export function createSqliteJobStore (db: Database): JobStore {
  const insert = db.prepare(`INSERT INTO jobs (id, kind, upstream_id, account_id, key_id, model_id, provider, price, hold_id, request_id, next_check_at, created_at)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (provider, kind, upstream_id) DO NOTHING`)
  const owned = db.prepare('SELECT * FROM jobs WHERE id = ? AND account_id = ?')
  const finish = db.prepare(`UPDATE jobs SET state = ?, upstream_status = coalesce(?, upstream_status), finished_at = ?, claimed_until = NULL
    WHERE id = ? AND state = 'pending' RETURNING *`)
  const claim = db.prepare(`UPDATE jobs SET claimed_until = ?
    WHERE id IN (SELECT id FROM jobs WHERE state = 'pending' AND next_check_at <= ? AND (claimed_until IS NULL OR claimed_until <= ?)
                 ORDER BY next_check_at LIMIT ?)
    RETURNING *`)
  const reschedule = db.prepare(`UPDATE jobs SET next_check_at = ?, checks = checks + 1, upstream_status = coalesce(?, upstream_status), claimed_until = NULL
    WHERE id = ? AND state = 'pending'`)
  return {
    async create (j) {
      return insert.run(j.id, j.kind, j.upstreamId, j.accountId, j.keyId, j.modelId, j.provider, j.price, j.holdId, j.requestId, j.nextCheckAt.getTime(), j.createdAt.getTime()).changes === 1
    },
    async getOwned (id, accountId) {
      const row = owned.get(id, accountId) as Row | undefined
      return row ? toRecord(row) : null
    },
    async finish (id, state, upstreamStatus, now) {
      const row = finish.get(state, upstreamStatus, now.getTime(), id) as Row | undefined
      return row ? toRecord(row) : null
    },
    async claimDue (now, leaseMs, limit) {
      const t = now.getTime()
      const rows = claim.all(t + leaseMs, t, t, limit) as Row[]
      return rows.map(toRecord).sort((a, b) => a.nextCheckAt.getTime() - b.nextCheckAt.getTime())
    },
    async reschedule (id, nextCheckAt, upstreamStatus) {
      reschedule.run(nextCheckAt.getTime(), upstreamStatus, id)
    }
  }
}
