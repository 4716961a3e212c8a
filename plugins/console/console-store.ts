// The console's own tables (migration 010), on the store the gateway already opened: SQLite or
// PostgreSQL through `store.backend`. Secrets never reach these rows in the clear: the password
// is an scrypt hash, the verification code and the session token are digests.
import type { Pool } from 'pg'
import { inTransaction } from '../store/pg/transaction.js'
import type { Database } from 'better-sqlite3'
import type { StoreBackend } from '../store/index.js'

export interface ConsoleUser {
  id: string
  accountId: string
  /** Normalised (trimmed, lower case). */
  email: string
  passwordHash: string
  emailVerifiedAt: Date | null
  createdAt: Date
}

export interface ConsoleSession {
  /** Public id (`ses_…`), listed and revoked by; not the cookie's token. */
  id: string
  userId: string
  accountId: string
  userAgent: string
  address: string
  createdAt: Date
  lastSeenAt: Date
  expiresAt: Date
}

export interface OutboxMessage {
  id: string
  to: string
  subject: string
  body: string
  createdAt: Date
}

export type CodeCheck = 'ok' | 'invalid' | 'expired' | 'none'

export interface ConsoleStore {
  /** `email_taken` when another user has the email (unique index: races lose too). */
  createUser (input: { id: string, accountId: string, email: string, passwordHash: string, createdAt: Date }): Promise<'ok' | 'email_taken'>
  userByEmail (email: string): Promise<ConsoleUser | null>
  markVerified (userId: string, at: Date): Promise<void>
  /** Replaces any pending code of the user (attempts start again at 0). */
  setCode (userId: string, codeHash: string, expiresAt: Date): Promise<void>
  /**
   * Compares a submitted code's digest with the pending one: a match deletes it; a miss counts
   * an attempt and voids the code at `maxAttempts`.
   */
  checkCode (userId: string, codeHash: string, now: Date, maxAttempts: number): Promise<CodeCheck>
  createSession (session: ConsoleSession, tokenHash: string): Promise<void>
  /** The live session of a token digest, or null (unknown or expired). */
  sessionByToken (tokenHash: string, now: Date): Promise<ConsoleSession | null>
  touchSession (id: string, at: Date): Promise<void>
  /** Live sessions of the user, newest first. */
  listSessions (userId: string, now: Date): Promise<ConsoleSession[]>
  /** False when the user has no such session. */
  deleteSession (userId: string, id: string): Promise<boolean>
  addOutbox (message: OutboxMessage): Promise<void>
  /** Newest first, optionally only those sent to `to`. */
  listOutbox (opts: { to?: string, limit: number }): Promise<OutboxMessage[]>
}

export function openConsoleStore (backend: StoreBackend): ConsoleStore {
  return backend.kind === 'sqlite' ? sqliteConsoleStore(backend.db) : pgConsoleStore(backend.pool)
}

// ---- SQLite --------------------------------------------------------------------------------

// The gateway's SQLite connection reads integers as BigInt (safeIntegers).
type Int = number | bigint
interface SqliteUserRow { id: string, account_id: string, email: string, password_hash: string, email_verified_at: Int | null, created_at: Int }
interface SqliteSessionRow { id: string, user_id: string, account_id: string, user_agent: string, address: string, created_at: Int, last_seen_at: Int, expires_at: Int }
interface SqliteOutboxRow { id: string, to_email: string, subject: string, body: string, created_at: Int }
const at = (v: Int): Date => new Date(Number(v))

const sqliteUser = (r: SqliteUserRow): ConsoleUser => ({
  id: r.id,
  accountId: r.account_id,
  email: r.email,
  passwordHash: r.password_hash,
  emailVerifiedAt: r.email_verified_at === null ? null : at(r.email_verified_at),
  createdAt: at(r.created_at)
})
const sqliteSession = (r: SqliteSessionRow): ConsoleSession => ({
  id: r.id,
  userId: r.user_id,
  accountId: r.account_id,
  userAgent: r.user_agent,
  address: r.address,
  createdAt: at(r.created_at),
  lastSeenAt: at(r.last_seen_at),
  expiresAt: at(r.expires_at)
})
const sqliteOutbox = (r: SqliteOutboxRow): OutboxMessage => ({ id: r.id, to: r.to_email, subject: r.subject, body: r.body, createdAt: at(r.created_at) })

function sqliteConsoleStore (db: Database): ConsoleStore {
  const insertUser = db.prepare('INSERT INTO console_users (id, account_id, email, password_hash, email_verified_at, created_at) VALUES (?, ?, ?, ?, NULL, ?) ON CONFLICT (email) DO NOTHING')
  const byEmail = db.prepare<[string], SqliteUserRow>('SELECT * FROM console_users WHERE email = ?')
  const verify = db.prepare('UPDATE console_users SET email_verified_at = COALESCE(email_verified_at, ?) WHERE id = ?')
  const upsertCode = db.prepare('INSERT INTO console_codes (user_id, code_hash, attempts, expires_at) VALUES (?, ?, 0, ?) ON CONFLICT (user_id) DO UPDATE SET code_hash = excluded.code_hash, attempts = 0, expires_at = excluded.expires_at')
  const getCode = db.prepare<[string], { code_hash: string, attempts: Int, expires_at: Int }>('SELECT code_hash, attempts, expires_at FROM console_codes WHERE user_id = ?')
  const deleteCode = db.prepare('DELETE FROM console_codes WHERE user_id = ?')
  const countAttempt = db.prepare('UPDATE console_codes SET attempts = attempts + 1 WHERE user_id = ?')
  const insertSession = db.prepare('INSERT INTO console_sessions (id, user_id, account_id, token_hash, user_agent, address, created_at, last_seen_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)')
  const byToken = db.prepare<[string, number], SqliteSessionRow>('SELECT * FROM console_sessions WHERE token_hash = ? AND expires_at > ?')
  const touch = db.prepare('UPDATE console_sessions SET last_seen_at = ? WHERE id = ?')
  const list = db.prepare<[string, number], SqliteSessionRow>('SELECT * FROM console_sessions WHERE user_id = ? AND expires_at > ? ORDER BY created_at DESC, id DESC')
  const del = db.prepare('DELETE FROM console_sessions WHERE user_id = ? AND id = ?')
  const purge = db.prepare('DELETE FROM console_sessions WHERE user_id = ? AND expires_at <= ?')
  const insertOutbox = db.prepare('INSERT INTO console_outbox (id, to_email, subject, body, created_at) VALUES (?, ?, ?, ?, ?)')
  const outboxAll = db.prepare<[number], SqliteOutboxRow>('SELECT * FROM console_outbox ORDER BY created_at DESC, id DESC LIMIT ?')
  const outboxTo = db.prepare<[string, number], SqliteOutboxRow>('SELECT * FROM console_outbox WHERE to_email = ? ORDER BY created_at DESC, id DESC LIMIT ?')
  const check = db.transaction((userId: string, codeHash: string, now: number, maxAttempts: number): CodeCheck => {
    const row = getCode.get(userId)
    if (row === undefined) return 'none'
    const attempts = Number(row.attempts)
    if (Number(row.expires_at) <= now || attempts >= maxAttempts) {
      deleteCode.run(userId)
      return 'expired'
    }
    if (row.code_hash === codeHash) {
      deleteCode.run(userId)
      return 'ok'
    }
    if (attempts + 1 >= maxAttempts) deleteCode.run(userId)
    else countAttempt.run(userId)
    return 'invalid'
  })
  return {
    async createUser (u) {
      const r = insertUser.run(u.id, u.accountId, u.email, u.passwordHash, u.createdAt.getTime())
      return r.changes === 1 ? 'ok' : 'email_taken'
    },
    async userByEmail (email) {
      const row = byEmail.get(email)
      return row === undefined ? null : sqliteUser(row)
    },
    async markVerified (userId, at) { verify.run(at.getTime(), userId) },
    async setCode (userId, codeHash, expiresAt) { upsertCode.run(userId, codeHash, expiresAt.getTime()) },
    async checkCode (userId, codeHash, now, maxAttempts) { return check(userId, codeHash, now.getTime(), maxAttempts) },
    async createSession (s, tokenHash) {
      insertSession.run(s.id, s.userId, s.accountId, tokenHash, s.userAgent, s.address, s.createdAt.getTime(), s.lastSeenAt.getTime(), s.expiresAt.getTime())
    },
    async sessionByToken (tokenHash, now) {
      const row = byToken.get(tokenHash, now.getTime())
      return row === undefined ? null : sqliteSession(row)
    },
    async touchSession (id, at) { touch.run(at.getTime(), id) },
    async listSessions (userId, now) {
      purge.run(userId, now.getTime())
      return list.all(userId, now.getTime()).map(sqliteSession)
    },
    async deleteSession (userId, id) { return del.run(userId, id).changes === 1 },
    async addOutbox (m) { insertOutbox.run(m.id, m.to, m.subject, m.body, m.createdAt.getTime()) },
    async listOutbox ({ to, limit }) {
      return (to === undefined ? outboxAll.all(limit) : outboxTo.all(to, limit)).map(sqliteOutbox)
    }
  }
}

// ---- PostgreSQL ------------------------------------------------------------------------------

interface PgUserRow { id: string, account_id: string, email: string, password_hash: string, email_verified_at: Date | null, created_at: Date }
interface PgSessionRow { id: string, user_id: string, account_id: string, user_agent: string, address: string, created_at: Date, last_seen_at: Date, expires_at: Date }
interface PgOutboxRow { id: string, to_email: string, subject: string, body: string, created_at: Date }

const pgUser = (r: PgUserRow): ConsoleUser => ({
  id: r.id, accountId: r.account_id, email: r.email, passwordHash: r.password_hash, emailVerifiedAt: r.email_verified_at, createdAt: r.created_at
})
const pgSession = (r: PgSessionRow): ConsoleSession => ({
  id: r.id, userId: r.user_id, accountId: r.account_id, userAgent: r.user_agent, address: r.address, createdAt: r.created_at, lastSeenAt: r.last_seen_at, expiresAt: r.expires_at
})
const pgOutbox = (r: PgOutboxRow): OutboxMessage => ({ id: r.id, to: r.to_email, subject: r.subject, body: r.body, createdAt: r.created_at })

function pgConsoleStore (pool: Pool): ConsoleStore {
  return {
    async createUser (u) {
      const r = await pool.query(
        'INSERT INTO console_users (id, account_id, email, password_hash, email_verified_at, created_at) VALUES ($1, $2, $3, $4, NULL, $5) ON CONFLICT (email) DO NOTHING',
        [u.id, u.accountId, u.email, u.passwordHash, u.createdAt])
      return r.rowCount === 1 ? 'ok' : 'email_taken'
    },
    async userByEmail (email) {
      const { rows } = await pool.query<PgUserRow>('SELECT * FROM console_users WHERE email = $1', [email])
      return rows[0] === undefined ? null : pgUser(rows[0])
    },
    async markVerified (userId, at) {
      await pool.query('UPDATE console_users SET email_verified_at = COALESCE(email_verified_at, $1) WHERE id = $2', [at, userId])
    },
    async setCode (userId, codeHash, expiresAt) {
      await pool.query(
        `INSERT INTO console_codes (user_id, code_hash, attempts, expires_at) VALUES ($1, $2, 0, $3)
         ON CONFLICT (user_id) DO UPDATE SET code_hash = excluded.code_hash, attempts = 0, expires_at = excluded.expires_at`,
        [userId, codeHash, expiresAt])
    },
    async checkCode (userId, codeHash, now, maxAttempts) {
      return await inTransaction(pool, async (client): Promise<CodeCheck> => {
        const { rows } = await client.query<{ code_hash: string, attempts: number, expires_at: Date }>(
          'SELECT code_hash, attempts, expires_at FROM console_codes WHERE user_id = $1 FOR UPDATE', [userId])
        const row = rows[0]
        if (row === undefined) return 'none'
        if (row.expires_at.getTime() <= now.getTime() || row.attempts >= maxAttempts) {
          await client.query('DELETE FROM console_codes WHERE user_id = $1', [userId])
          return 'expired'
        }
        if (row.code_hash === codeHash) {
          await client.query('DELETE FROM console_codes WHERE user_id = $1', [userId])
          return 'ok'
        }
        if (row.attempts + 1 >= maxAttempts) await client.query('DELETE FROM console_codes WHERE user_id = $1', [userId])
        else await client.query('UPDATE console_codes SET attempts = attempts + 1 WHERE user_id = $1', [userId])
        return 'invalid'
      })
    },
    async createSession (s, tokenHash) {
      await pool.query(
        `INSERT INTO console_sessions (id, user_id, account_id, token_hash, user_agent, address, created_at, last_seen_at, expires_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
        [s.id, s.userId, s.accountId, tokenHash, s.userAgent, s.address, s.createdAt, s.lastSeenAt, s.expiresAt])
    },
    async sessionByToken (tokenHash, now) {
      const { rows } = await pool.query<PgSessionRow>('SELECT * FROM console_sessions WHERE token_hash = $1 AND expires_at > $2', [tokenHash, now])
      return rows[0] === undefined ? null : pgSession(rows[0])
    },
    async touchSession (id, at) {
      await pool.query('UPDATE console_sessions SET last_seen_at = $1 WHERE id = $2', [at, id])
    },
    async listSessions (userId, now) {
      await pool.query('DELETE FROM console_sessions WHERE user_id = $1 AND expires_at <= $2', [userId, now])
      const { rows } = await pool.query<PgSessionRow>(
        'SELECT * FROM console_sessions WHERE user_id = $1 AND expires_at > $2 ORDER BY created_at DESC, id DESC', [userId, now])
      return rows.map(pgSession)
    },
    async deleteSession (userId, id) {
      const r = await pool.query('DELETE FROM console_sessions WHERE user_id = $1 AND id = $2', [userId, id])
      return r.rowCount === 1
    },
    async addOutbox (m) {
      await pool.query('INSERT INTO console_outbox (id, to_email, subject, body, created_at) VALUES ($1, $2, $3, $4, $5)', [m.id, m.to, m.subject, m.body, m.createdAt])
    },
    async listOutbox ({ to, limit }) {
      const { rows } = to === undefined
        ? await pool.query<PgOutboxRow>('SELECT * FROM console_outbox ORDER BY created_at DESC, id DESC LIMIT $1', [limit])
        : await pool.query<PgOutboxRow>('SELECT * FROM console_outbox WHERE to_email = $1 ORDER BY created_at DESC, id DESC LIMIT $2', [to, limit])
      return rows.map(pgOutbox)
    }
  }
}
