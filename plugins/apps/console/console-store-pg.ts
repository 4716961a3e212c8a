// The console store on PostgreSQL (times are TIMESTAMPTZ). Checks that must see and change a
// row together run in one transaction holding the row (FOR UPDATE, or the unique index a
// concurrent insert waits on), so every instance on the database sees one outcome.
import type { Pool, PoolClient } from 'pg'
import { inTransaction } from '../../foundation/store/pg/transaction.js'
import type { CodeCheck, CompleteSignup, ConsoleSession, ConsoleStore, ConsoleUser, OutboxMessage, PendingSignup, StartSignup } from './console-store.js'

interface UserRow { id: string, account_id: string, email: string, password_hash: string, email_verified_at: Date | null, created_at: Date }
interface SessionRow { id: string, user_id: string, account_id: string, user_agent: string, address: string, created_at: Date, last_seen_at: Date, expires_at: Date }
interface OutboxRow { id: string, to_email: string, subject: string, body: string, created_at: Date }
interface SignupRow { email: string, password_hash: string, started_at: Date, account_id: string | null }

const user = (r: UserRow): ConsoleUser => ({
  id: r.id, accountId: r.account_id, email: r.email, passwordHash: r.password_hash, emailVerifiedAt: r.email_verified_at, createdAt: r.created_at
})
const session = (r: SessionRow): ConsoleSession => ({
  id: r.id, userId: r.user_id, accountId: r.account_id, userAgent: r.user_agent, address: r.address, createdAt: r.created_at, lastSeenAt: r.last_seen_at, expiresAt: r.expires_at
})
const outbox = (r: OutboxRow): OutboxMessage => ({ id: r.id, to: r.to_email, subject: r.subject, body: r.body, createdAt: r.created_at })
const signup = (r: SignupRow): PendingSignup => ({ email: r.email, passwordHash: r.password_hash, startedAt: r.started_at, accountId: r.account_id })

const UPSERT_CODE = `INSERT INTO console_email_codes (purpose, email, code_hash, attempts, expires_at) VALUES ($1, $2, $3, 0, $4)
  ON CONFLICT (purpose, email) DO UPDATE SET code_hash = excluded.code_hash, attempts = 0, expires_at = excluded.expires_at`

/** Thrown to roll a sign-up back when a user took its email meanwhile. */
class EmailRegistered extends Error {}

async function emailTaken (client: PoolClient, email: string): Promise<boolean> {
  return (await client.query('SELECT 1 FROM console_users WHERE email = $1', [email])).rowCount !== 0
}

export function pgConsoleStore (pool: Pool): ConsoleStore {
  return {
    async userByEmail (email) {
      const { rows } = await pool.query<UserRow>('SELECT * FROM console_users WHERE email = $1', [email])
      return rows[0] === undefined ? null : user(rows[0])
    },
    async startSignup (s) {
      try {
        return await inTransaction(pool, async (client): Promise<StartSignup> => {
          if (await emailTaken(client, s.email)) return 'registered'
          // A new row is ours; an existing one is locked while we decide (a concurrent insert of
          // the same email waits on the primary key, then sees the row we committed).
          const inserted = await client.query(
            'INSERT INTO console_signups (email, password_hash, started_at, account_id) VALUES ($1, $2, $3, NULL) ON CONFLICT (email) DO NOTHING',
            [s.email, s.passwordHash, s.now])
          if (inserted.rowCount !== 1) {
            const { rows } = await client.query<{ started_at: Date }>('SELECT started_at FROM console_signups WHERE email = $1 FOR UPDATE', [s.email])
            const pending = rows[0]
            // Gone while we waited for it: its verification completed.
            if (pending === undefined) return 'registered'
            if (pending.started_at.getTime() >= s.restartBefore.getTime()) return 'pending'
            await client.query('UPDATE console_signups SET password_hash = $2, started_at = $3 WHERE email = $1', [s.email, s.passwordHash, s.now])
          }
          // A verification that completed after the first look: undo the sign-up row.
          if (await emailTaken(client, s.email)) throw new EmailRegistered()
          await client.query(UPSERT_CODE, ['verify', s.email, s.codeHash, s.codeExpiresAt])
          return 'started'
        })
      } catch (err) {
        if (err instanceof EmailRegistered) return 'registered'
        throw err
      }
    },
    async pendingSignup (email) {
      const { rows } = await pool.query<SignupRow>('SELECT * FROM console_signups WHERE email = $1', [email])
      return rows[0] === undefined ? null : signup(rows[0])
    },
    async completeSignup (c) {
      return await inTransaction(pool, async (client): Promise<CompleteSignup> => {
        const { rows } = await client.query<{ password_hash: string }>('SELECT password_hash FROM console_signups WHERE email = $1 FOR UPDATE', [c.email])
        const pending = rows[0]
        if (pending === undefined) return 'gone'
        const r = await client.query(
          'INSERT INTO console_users (id, account_id, email, password_hash, email_verified_at, created_at) VALUES ($1, $2, $3, $4, $5, $5) ON CONFLICT (email) DO NOTHING',
          [c.userId, c.accountId, c.email, pending.password_hash, c.at])
        if (r.rowCount !== 1) return 'email_taken'
        await client.query('DELETE FROM console_signups WHERE email = $1', [c.email])
        return 'ok'
      })
    },
    async setCode (purpose, email, codeHash, expiresAt) {
      await pool.query(UPSERT_CODE, [purpose, email, codeHash, expiresAt])
    },
    async checkCode (purpose, email, matches, now, maxAttempts) {
      return await inTransaction(pool, async (client): Promise<CodeCheck> => {
        const { rows } = await client.query<{ code_hash: string, attempts: number, expires_at: Date }>(
          'SELECT code_hash, attempts, expires_at FROM console_email_codes WHERE purpose = $1 AND email = $2 FOR UPDATE', [purpose, email])
        const row = rows[0]
        if (row === undefined) return 'none'
        const remove = async (): Promise<void> => { await client.query('DELETE FROM console_email_codes WHERE purpose = $1 AND email = $2', [purpose, email]) }
        if (row.expires_at.getTime() <= now.getTime() || row.attempts >= maxAttempts) {
          await remove()
          return 'expired'
        }
        if (matches(row.code_hash)) {
          await remove()
          return 'ok'
        }
        if (row.attempts + 1 >= maxAttempts) await remove()
        else await client.query('UPDATE console_email_codes SET attempts = attempts + 1 WHERE purpose = $1 AND email = $2', [purpose, email])
        return 'invalid'
      })
    },
    async setPassword (userId, passwordHash) {
      await pool.query('UPDATE console_users SET password_hash = $1 WHERE id = $2', [passwordHash, userId])
    },
    async createSession (s, tokenHash, keep) {
      await pool.query(
        `INSERT INTO console_sessions (id, user_id, account_id, token_hash, user_agent, address, created_at, last_seen_at, expires_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
        [s.id, s.userId, s.accountId, tokenHash, s.userAgent, s.address, s.createdAt, s.lastSeenAt, s.expiresAt])
      if (keep === undefined) return
      await pool.query(
        `DELETE FROM console_sessions WHERE user_id = $1 AND id <> $2 AND (expires_at <= $3 OR id IN (
           SELECT id FROM console_sessions WHERE user_id = $1 AND id <> $2 ORDER BY created_at DESC, id DESC OFFSET $4))`,
        [s.userId, s.id, s.createdAt, Math.max(0, keep - 1)])
    },
    async sessionByToken (tokenHash, now) {
      const { rows } = await pool.query<SessionRow>('SELECT * FROM console_sessions WHERE token_hash = $1 AND expires_at > $2', [tokenHash, now])
      return rows[0] === undefined ? null : session(rows[0])
    },
    async touchSession (id, when) {
      await pool.query('UPDATE console_sessions SET last_seen_at = $1 WHERE id = $2', [when, id])
    },
    async listSessions (userId, now) {
      await pool.query('DELETE FROM console_sessions WHERE user_id = $1 AND expires_at <= $2', [userId, now])
      const { rows } = await pool.query<SessionRow>(
        'SELECT * FROM console_sessions WHERE user_id = $1 AND expires_at > $2 ORDER BY created_at DESC, id DESC', [userId, now])
      return rows.map(session)
    },
    async deleteSession (userId, id) {
      const r = await pool.query('DELETE FROM console_sessions WHERE user_id = $1 AND id = $2', [userId, id])
      return r.rowCount === 1
    },
    async deleteSessionsOf (userId) {
      return (await pool.query('DELETE FROM console_sessions WHERE user_id = $1', [userId])).rowCount ?? 0
    },
    async addOutbox (m) {
      await pool.query('INSERT INTO console_outbox (id, to_email, subject, body, created_at) VALUES ($1, $2, $3, $4, $5)', [m.id, m.to, m.subject, m.body, m.createdAt])
    },
    async listOutbox ({ to, limit }) {
      const { rows } = to === undefined
        ? await pool.query<OutboxRow>('SELECT * FROM console_outbox ORDER BY created_at DESC, id DESC LIMIT $1', [limit])
        : await pool.query<OutboxRow>('SELECT * FROM console_outbox WHERE to_email = $1 ORDER BY created_at DESC, id DESC LIMIT $2', [to, limit])
      return rows.map(outbox)
    },
    async count (key, windowMs, now) {
      // In DO UPDATE, bare column names are the stored row: a window that ended starts again at 1.
      const { rows } = await pool.query<{ count: number, window_ends_at: Date }>(
        `INSERT INTO console_throttle AS t (key, count, window_ends_at) VALUES ($1, 1, $3)
         ON CONFLICT (key) DO UPDATE SET
           count = CASE WHEN t.window_ends_at <= $2 THEN 1 ELSE t.count + 1 END,
           window_ends_at = CASE WHEN t.window_ends_at <= $2 THEN excluded.window_ends_at ELSE t.window_ends_at END
         RETURNING count, window_ends_at`,
        [key, now, new Date(now.getTime() + windowMs)])
      const row = rows[0]
      if (row === undefined) throw new Error('console_throttle: the upsert returned no row')
      return { count: row.count, windowEndsAt: row.window_ends_at }
    },
    async uncount (key, now) {
      await pool.query('UPDATE console_throttle SET count = GREATEST(count - 1, 0) WHERE key = $1 AND window_ends_at > $2', [key, now])
    },
    async clearCount (key) {
      await pool.query('DELETE FROM console_throttle WHERE key = $1', [key])
    },
    async sweepCounts (now) {
      await pool.query('DELETE FROM console_throttle WHERE window_ends_at <= $1', [now])
    }
  }
}
