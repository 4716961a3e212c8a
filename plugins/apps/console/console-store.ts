// The console's own tables (migrations 010 and 015), on the store the gateway already opened:
// SQLite or PostgreSQL through `store.backend`. Secrets never reach these rows in the clear: a
// password is an scrypt hash, an email code and a session token are digests, a throttle key an
// HMAC of what it counts (never a client address or an email).
import type { StoreBackend } from '../../foundation/store/index.js'
import { sqliteConsoleStore } from './console-store-sqlite.js'
import { pgConsoleStore } from './console-store-pg.js'

export interface ConsoleUser {
  id: string
  accountId: string
  /** Normalised (trimmed, lower case). */
  email: string
  passwordHash: string
  /** Null only for a user an instance older than migration 015 created during a rolling deploy. */
  emailVerifiedAt: Date | null
  createdAt: Date
}

/** A sign-up waiting for its email code: no user and no account exist for it yet. */
export interface PendingSignup {
  email: string
  passwordHash: string
  startedAt: Date
  /** The account of an unverified user from before migration 015, kept for it; else null. */
  accountId: string | null
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

/** What an email code proves: a sign-up's address, or a password reset. */
export type CodePurpose = 'verify' | 'reset'
export type CodeCheck = 'ok' | 'invalid' | 'expired' | 'none'
export type StartSignup = 'started' | 'registered' | 'pending'
export type CompleteSignup = 'ok' | 'gone' | 'email_taken'

/** A throttle counter's open window. */
export interface Count { count: number, windowEndsAt: Date }

export interface StartSignupInput {
  email: string
  passwordHash: string
  codeHash: string
  codeExpiresAt: Date
  now: Date
  /** A pending sign-up started before this may be restarted (new password, new code). */
  restartBefore: Date
}

export interface ConsoleStore {
  userByEmail (email: string): Promise<ConsoleUser | null>
  /**
   * Starts a sign-up, or restarts one started before `restartBefore`, with its verify code, in
   * one transaction: `registered` when a user has the email, `pending` when a younger pending
   * sign-up holds it (concurrent sign-ups: one starts, the others see it pending).
   */
  startSignup (input: StartSignupInput): Promise<StartSignup>
  pendingSignup (email: string): Promise<PendingSignup | null>
  /**
   * The pending sign-up of `email` becomes a verified user of `accountId`, in one transaction:
   * `gone` when no sign-up is pending, `email_taken` when a user has the email.
   */
  completeSignup (input: { email: string, userId: string, accountId: string, at: Date }): Promise<CompleteSignup>
  /** Replaces any pending code of this purpose and address (its attempts start again at 0). */
  setCode (purpose: CodePurpose, email: string, codeHash: string, expiresAt: Date): Promise<void>
  /**
   * Checks a submitted code against the pending one with `matches` (a constant-time compare of
   * the stored digest): a match deletes it; a miss counts an attempt and voids the code at
   * `maxAttempts`; an expired or used-up code is deleted.
   */
  checkCode (purpose: CodePurpose, email: string, matches: (storedHash: string) => boolean, now: Date, maxAttempts: number): Promise<CodeCheck>
  setPassword (userId: string, passwordHash: string): Promise<void>
  /**
   * Stores a session; when `keep` is given, the user's other sessions beyond the `keep - 1`
   * newest (and any expired) are deleted, so a user holds at most `keep` sessions.
   */
  createSession (session: ConsoleSession, tokenHash: string, keep?: number): Promise<void>
  /** The live session of a token digest, or null (unknown or expired). */
  sessionByToken (tokenHash: string, now: Date): Promise<ConsoleSession | null>
  touchSession (id: string, at: Date): Promise<void>
  /** Live sessions of the user, newest first. */
  listSessions (userId: string, now: Date): Promise<ConsoleSession[]>
  /** False when the user has no such session. */
  deleteSession (userId: string, id: string): Promise<boolean>
  /** Ends every session of the user (a password reset); the number ended. */
  deleteSessionsOf (userId: string): Promise<number>
  addOutbox (message: OutboxMessage): Promise<void>
  /** Newest first, optionally only those sent to `to`. */
  listOutbox (opts: { to?: string, limit: number }): Promise<OutboxMessage[]>
  /** Adds one to the counter `key`, opening a window of `windowMs` when none is open at `now`. */
  count (key: string, windowMs: number, now: Date): Promise<Count>
  /** Takes one back from the counter's open window (never below 0). */
  uncount (key: string, now: Date): Promise<void>
  clearCount (key: string): Promise<void>
  /** Deletes the counters whose window ended. */
  sweepCounts (now: Date): Promise<void>
}

export function openConsoleStore (backend: StoreBackend): ConsoleStore {
  return backend.kind === 'sqlite' ? sqliteConsoleStore(backend.db) : pgConsoleStore(backend.pool)
}
