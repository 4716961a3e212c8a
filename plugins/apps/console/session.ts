// Console sessions: a random token in an HttpOnly, SameSite=Strict cookie (Secure when the
// request came over https), stored only as its SHA-256; the CSRF token is an HMAC of the session
// token under the server secret, so it needs no storage and dies with its session.
import type { FastifyReply, FastifyRequest } from 'fastify'
import { gatewayError } from '../../foundation/errors/index.js'
import type { ConsoleSession, ConsoleStore } from './console-store.js'
import { safeEqualText, sha256Hex } from './secrets.js'

export const SESSION_COOKIE = 'gw_console'
export const CSRF_HEADER = 'x-csrf-token'
/**
 * Sessions one user holds at once: a sign-in past it ends the oldest. Without a bound a tenant
 * signing in over and over grew console_sessions, and GET /sessions, without end.
 */
export const MAX_SESSIONS_PER_USER = 20
/** The cookie is sent to the console only (page and API), never to the model routes. */
const COOKIE_PATH = '/console'
/** last_seen_at is written at most this often per session. */
const TOUCH_INTERVAL_MS = 60_000

export function readCookie (header: string | undefined, name: string): string | null {
  if (header === undefined) return null
  for (const part of header.split(';')) {
    const eq = part.indexOf('=')
    if (eq < 0) continue
    if (part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim()
  }
  return null
}

export function setSessionCookie (req: FastifyRequest, reply: FastifyReply, token: string, maxAgeMs: number): void {
  const secure = req.protocol === 'https' ? '; Secure' : ''
  reply.header('set-cookie', `${SESSION_COOKIE}=${token}; Path=${COOKIE_PATH}; Max-Age=${Math.floor(maxAgeMs / 1000)}; HttpOnly; SameSite=Strict${secure}`)
}

export function clearSessionCookie (req: FastifyRequest, reply: FastifyReply): void {
  const secure = req.protocol === 'https' ? '; Secure' : ''
  reply.header('set-cookie', `${SESSION_COOKIE}=; Path=${COOKIE_PATH}; Max-Age=0; HttpOnly; SameSite=Strict${secure}`)
}

export const tokenDigest = (token: string): string => sha256Hex(`console-session:${token}`)

export interface SignedIn {
  session: ConsoleSession
  /** The cookie's token (to derive the CSRF token). */
  token: string
}

export class Sessions {
  constructor (
    private readonly store: ConsoleStore,
    /** HMAC-SHA256 under the server secret. */
    private readonly mac: (text: string) => string,
    private readonly now: () => Date,
    /** False when the account may no longer use the console (suspended by an operator). */
    private readonly accountActive: (accountId: string) => Promise<boolean>
  ) {}

  csrfToken (token: string): string {
    return this.mac(`console-csrf:${token}`)
  }

  /** The request's live session, or null. */
  async current (req: FastifyRequest): Promise<SignedIn | null> {
    const token = readCookie(req.headers.cookie, SESSION_COOKIE)
    if (token === null || !/^[A-Za-z0-9_-]{43}$/.test(token)) return null
    const now = this.now()
    const session = await this.store.sessionByToken(tokenDigest(token), now)
    if (session === null) return null
    if (now.getTime() - session.lastSeenAt.getTime() > TOUCH_INTERVAL_MS) await this.store.touchSession(session.id, now)
    return { session, token }
  }

  /** AUTH_REQUIRED without a live session. */
  async require (req: FastifyRequest): Promise<SignedIn> {
    const signedIn = await this.current(req)
    if (signedIn === null) throw gatewayError('AUTH_REQUIRED', { detail: 'Sign in to the console.' })
    // An operator's suspension applies to sessions already open, not only to the next sign-in.
    if (!(await this.accountActive(signedIn.session.accountId))) throw gatewayError('AUTH_ACCOUNT_SUSPENDED')
    return signedIn
  }

  /** A state change: a live session and its CSRF token in the X-CSRF-Token header. */
  async requireWithCsrf (req: FastifyRequest): Promise<SignedIn> {
    const signedIn = await this.require(req)
    const sent = req.headers[CSRF_HEADER]
    if (sent === undefined || sent === '') throw gatewayError('AUTH_CSRF_TOKEN_MISSING', { detail: 'Send the session\'s CSRF token in X-CSRF-Token.' })
    if (typeof sent !== 'string' || !safeEqualText(sent, this.csrfToken(signedIn.token))) throw gatewayError('AUTH_CSRF_TOKEN_INVALID')
    return signedIn
  }
}
