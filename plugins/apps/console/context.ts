// What the console's route files share: their dependencies, built once per console (api.ts),
// and the small checks of a JSON body every open route makes.
import type { FastifyRequest } from 'fastify'
import type { AdminContext } from '../../concerns/accounts/service.js'
import type { ConsoleConfig } from '../../foundation/config/types.js'
import { gatewayError } from '../../foundation/errors/index.js'
import type { Store } from '../../foundation/store/index.js'
import type { ConsoleSession, ConsoleStore } from './console-store.js'
import type { EmailCodes } from './email-codes.js'
import type { PasswordHasher } from './password-hasher.js'
import type { Sessions, SignedIn } from './session.js'
import { throttleAddress, type ConsoleBudgets, type ConsoleThrottle } from './throttle.js'

export interface ConsoleDeps {
  store: Store
  consoleStore: ConsoleStore
  config: ConsoleConfig
  admin: AdminContext
  /** HMAC-SHA256 under the server secret. */
  mac: (text: string) => string
  sessions: Sessions
  throttle: ConsoleThrottle
  budgets: ConsoleBudgets
  hasher: PasswordHasher
  codes: EmailCodes
}

export function invalid (param: string, detail: string): Error {
  return gatewayError('REQUEST_INVALID', { param, detail })
}

export function objectBody (body: unknown): Record<string, unknown> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw invalid('body', 'The body must be a JSON object.')
  return body as Record<string, unknown>
}

/**
 * The body's password, refused before any hashing when it is not a string or longer than
 * `password_max_length` characters; `setting` (sign-up, reset) also checks the minimum.
 */
export function passwordField (body: Record<string, unknown>, config: ConsoleConfig, setting: boolean): string {
  const v = body.password
  if (typeof v !== 'string' || v.length === 0) throw invalid('password', 'password is required (a string).')
  // Code points, as the minimum counts them; the UTF-16 length bounds them first (cheaply).
  const length = v.length > config.password_max_length * 2 ? Infinity : [...v].length
  if (length > config.password_max_length) throw invalid('password', `password must be at most ${config.password_max_length} characters.`)
  if (setting && length < config.password_min_length) throw invalid('password', `password must be at least ${config.password_min_length} characters.`)
  return v
}

/** The client address as the throttles count it (after the trusted proxies; IPv6 per /64). */
export function clientSubject (req: FastifyRequest): string {
  return throttleAddress(req.ip)
}

/** Whether the session's sign-in is recent enough to show or mint a key's plaintext. */
export function requireFreshSignIn (session: ConsoleSession, config: ConsoleConfig, now: Date, what: string): void {
  if (now.getTime() - session.createdAt.getTime() > config.reveal_window_ms) {
    throw gatewayError('AUTH_FORBIDDEN', { detail: `${what} needs a recent sign-in: sign out and in again.` })
  }
}

/** The request's session (CSRF-checked when `change`), its account noted for the access log. */
export async function signedInAs (sessions: Sessions, req: FastifyRequest, change: boolean): Promise<SignedIn> {
  const s = change ? await sessions.requireWithCsrf(req) : await sessions.require(req)
  req.callAudit.accountId = s.session.accountId
  return s
}
