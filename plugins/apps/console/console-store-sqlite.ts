// The console store on the embedded SQLite database (times are ms since the epoch). Every
// statement is prepared once; checks that must see and change a row together run in one
// transaction (better-sqlite3 transactions are synchronous, so nothing interleaves).
import type { Database } from 'better-sqlite3'
import type { CodeCheck, CompleteSignup, ConsoleSession, ConsoleStore, ConsoleUser, OutboxMessage, PendingSignup, StartSignup, StartSignupInput } from './console-store.js'

// The gateway's SQLite connection reads integers as BigInt (safeIntegers).
type Int = number | bigint
interface UserRow { id: string, account_id: string, email: string, password_hash: string, email_verified_at: Int | null, created_at: Int }
interface SessionRow { id: string, user_id: string, account_id: string, user_agent: string, address: string, created_at: Int, last_seen_at: Int, expires_at: Int }
interface OutboxRow { id: string, to_email: string, subject: string, body: string, created_at: Int }
interface SignupRow { email: string, password_hash: string, started_at: Int, account_id: string | null }
interface CodeRow { code_hash: string, attempts: Int, expires_at: Int }
const at = (v: Int): Date => new Date(Number(v))

const user = (r: UserRow): ConsoleUser => ({
  id: r.id,
  accountId: r.account_id,
  email: r.email,
  passwordHash: r.password_hash,
  emailVerifiedAt: r.email_verified_at === null ? null : at(r.email_verified_at),
  createdAt: at(r.created_at)
})
const session = (r: SessionRow): ConsoleSession => ({
  id: r.id,
  userId: r.user_id,
  accountId: r.account_id,
  userAgent: r.user_agent,
  address: r.address,
  createdAt: at(r.created_at),
  lastSeenAt: at(r.last_seen_at),
  expiresAt: at(r.expires_at)
})
const outbox = (r: OutboxRow): OutboxMessage => ({ id: r.id, to: r.to_email, subject: r.subject, body: r.body, createdAt: at(r.created_at) })
const signup = (r: SignupRow): PendingSignup => ({ email: r.email, passwordHash: r.password_hash, startedAt: at(r.started_at), accountId: r.account_id })

export function sqliteConsoleStore (db: Database): ConsoleStore {
  const byEmail = db.prepare<[string], UserRow>('SELECT * FROM console_users WHERE email = ?')
  const signupOf = db.prepare<[string], SignupRow>('SELECT * FROM console_signups WHERE email = ?')
  const upsertSignup = db.prepare(`INSERT INTO console_signups (email, password_hash, started_at, account_id) VALUES (?, ?, ?, NULL)
    ON CONFLICT (email) DO UPDATE SET password_hash = excluded.password_hash, started_at = excluded.started_at`)
  const deleteSignup = db.prepare('DELETE FROM console_signups WHERE email = ?')
  const insertUser = db.prepare('INSERT INTO console_users (id, account_id, email, password_hash, email_verified_at, created_at) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (email) DO NOTHING')
  const upsertCode = db.prepare(`INSERT INTO console_email_codes (purpose, email, code_hash, attempts, expires_at) VALUES (?, ?, ?, 0, ?)
    ON CONFLICT (purpose, email) DO UPDATE SET code_hash = excluded.code_hash, attempts = 0, expires_at = excluded.expires_at`)
  const getCode = db.prepare<[string, string], CodeRow>('SELECT code_hash, attempts, expires_at FROM console_email_codes WHERE purpose = ? AND email = ?')
  const deleteCode = db.prepare('DELETE FROM console_email_codes WHERE purpose = ? AND email = ?')
  const countAttempt = db.prepare('UPDATE console_email_codes SET attempts = attempts + 1 WHERE purpose = ? AND email = ?')
  const setPassword = db.prepare('UPDATE console_users SET password_hash = ? WHERE id = ?')
  const insertSession = db.prepare('INSERT INTO console_sessions (id, user_id, account_id, token_hash, user_agent, address, created_at, last_seen_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)')
  const byToken = db.prepare<[string, number], SessionRow>('SELECT * FROM console_sessions WHERE token_hash = ? AND expires_at > ?')
  const touch = db.prepare('UPDATE console_sessions SET last_seen_at = ? WHERE id = ?')
  const list = db.prepare<[string, number], SessionRow>('SELECT * FROM console_sessions WHERE user_id = ? AND expires_at > ? ORDER BY created_at DESC, id DESC')
  const del = db.prepare('DELETE FROM console_sessions WHERE user_id = ? AND id = ?')
  const delAll = db.prepare('DELETE FROM console_sessions WHERE user_id = ?')
  const purge = db.prepare('DELETE FROM console_sessions WHERE user_id = ? AND expires_at <= ?')
  const trim = db.prepare(`DELETE FROM console_sessions WHERE user_id = ? AND id <> ? AND (expires_at <= ? OR id IN (
    SELECT id FROM console_sessions WHERE user_id = ? AND id <> ? ORDER BY created_at DESC, id DESC LIMIT -1 OFFSET ?))`)
  const insertOutbox = db.prepare('INSERT INTO console_outbox (id, to_email, subject, body, created_at) VALUES (?, ?, ?, ?, ?)')
  const outboxAll = db.prepare<[number], OutboxRow>('SELECT * FROM console_outbox ORDER BY created_at DESC, id DESC LIMIT ?')
  const outboxTo = db.prepare<[string, number], OutboxRow>('SELECT * FROM console_outbox WHERE to_email = ? ORDER BY created_at DESC, id DESC LIMIT ?')
  // In DO UPDATE, bare column names are the stored row: a window that ended starts again at 1.
  const count = db.prepare<{ key: string, now: number, ends: number }, { count: Int, window_ends_at: Int }>(`
    INSERT INTO console_throttle (key, count, window_ends_at) VALUES (@key, 1, @ends)
    ON CONFLICT (key) DO UPDATE SET
      count = CASE WHEN window_ends_at <= @now THEN 1 ELSE count + 1 END,
      window_ends_at = CASE WHEN window_ends_at <= @now THEN excluded.window_ends_at ELSE window_ends_at END
    RETURNING count, window_ends_at`)
  const uncount = db.prepare('UPDATE console_throttle SET count = MAX(count - 1, 0) WHERE key = ? AND window_ends_at > ?')
  const clearCount = db.prepare('DELETE FROM console_throttle WHERE key = ?')
  const sweep = db.prepare('DELETE FROM console_throttle WHERE window_ends_at <= ?')

  const start = db.transaction((s: StartSignupInput): StartSignup => {
    if (byEmail.get(s.email) !== undefined) return 'registered'
    const pending = signupOf.get(s.email)
    if (pending !== undefined && Number(pending.started_at) >= s.restartBefore.getTime()) return 'pending'
    upsertSignup.run(s.email, s.passwordHash, s.now.getTime())
    upsertCode.run('verify', s.email, s.codeHash, s.codeExpiresAt.getTime())
    return 'started'
  })
  const complete = db.transaction((email: string, userId: string, accountId: string, when: number): CompleteSignup => {
    const pending = signupOf.get(email)
    if (pending === undefined) return 'gone'
    if (insertUser.run(userId, accountId, email, pending.password_hash, when, when).changes !== 1) return 'email_taken'
    deleteSignup.run(email)
    return 'ok'
  })
  const check = db.transaction((purpose: string, email: string, matches: (h: string) => boolean, now: number, maxAttempts: number): CodeCheck => {
    const row = getCode.get(purpose, email)
    if (row === undefined) return 'none'
    const attempts = Number(row.attempts)
    if (Number(row.expires_at) <= now || attempts >= maxAttempts) {
      deleteCode.run(purpose, email)
      return 'expired'
    }
    if (matches(row.code_hash)) {
      deleteCode.run(purpose, email)
      return 'ok'
    }
    if (attempts + 1 >= maxAttempts) deleteCode.run(purpose, email)
    else countAttempt.run(purpose, email)
    return 'invalid'
  })

  return {
    async userByEmail (email) {
      const row = byEmail.get(email)
      return row === undefined ? null : user(row)
    },
    async startSignup (s) { return start(s) },
    async pendingSignup (email) {
      const row = signupOf.get(email)
      return row === undefined ? null : signup(row)
    },
    async completeSignup (c) { return complete(c.email, c.userId, c.accountId, c.at.getTime()) },
    async setCode (purpose, email, codeHash, expiresAt) { upsertCode.run(purpose, email, codeHash, expiresAt.getTime()) },
    async checkCode (purpose, email, matches, now, maxAttempts) { return check(purpose, email, matches, now.getTime(), maxAttempts) },
    async setPassword (userId, passwordHash) { setPassword.run(passwordHash, userId) },
    async createSession (s, tokenHash, keep) {
      db.transaction(() => {
        insertSession.run(s.id, s.userId, s.accountId, tokenHash, s.userAgent, s.address, s.createdAt.getTime(), s.lastSeenAt.getTime(), s.expiresAt.getTime())
        if (keep !== undefined) trim.run(s.userId, s.id, s.createdAt.getTime(), s.userId, s.id, Math.max(0, keep - 1))
      })()
    },
    async sessionByToken (tokenHash, now) {
      const row = byToken.get(tokenHash, now.getTime())
      return row === undefined ? null : session(row)
    },
    async touchSession (id, when) { touch.run(when.getTime(), id) },
    async listSessions (userId, now) {
      purge.run(userId, now.getTime())
      return list.all(userId, now.getTime()).map(session)
    },
    async deleteSession (userId, id) { return del.run(userId, id).changes === 1 },
    async deleteSessionsOf (userId) { return delAll.run(userId).changes },
    async addOutbox (m) { insertOutbox.run(m.id, m.to, m.subject, m.body, m.createdAt.getTime()) },
    async listOutbox ({ to, limit }) {
      return (to === undefined ? outboxAll.all(limit) : outboxTo.all(to, limit)).map(outbox)
    },
    async count (key, windowMs, now) {
      const row = count.get({ key, now: now.getTime(), ends: now.getTime() + windowMs })
      if (row === undefined) throw new Error('console_throttle: the upsert returned no row')
      return { count: Number(row.count), windowEndsAt: at(row.window_ends_at) }
    },
    async uncount (key, now) { uncount.run(key, now.getTime()) },
    async clearCount (key) { clearCount.run(key) },
    async sweepCounts (now) { sweep.run(now.getTime()) }
  }
}
