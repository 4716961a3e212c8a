import type { ErrorCode } from './codes.js'

export type BillingStatus = 'NOT_BILLED' | 'BILLED' | 'PENDING' | 'UNKNOWN'

export interface GatewayErrorDetails {
  /** The request field at fault, rendered as `param` in the chat envelope. */
  param?: string | null
  /** Overrides the catalogue's Retry-After for this occurrence (rate limits). */
  retryAfterSeconds?: number
  billing?: BillingStatus
  /** Extra words for the public message; never secrets. */
  detail?: string
  /**
   * Identifiers the client can act on (e.g. `original_request_id`, `job_id` of an idempotency
   * refusal), rendered as extra string fields of the error object (chat, messages) or entries of
   * the error-info metadata (genai). Never secrets.
   */
  fields?: Readonly<Record<string, string>>
  cause?: unknown
  /**
   * The request's body was refused before it was all read: the answer says `Connection: close`,
   * so the rest of a hostile body is not read (a slow upload is not kept open, a bomb not dumped).
   */
  closeConnection?: boolean
}

/** The only error type that reaches a client: a catalogue code plus occurrence details. */
export class GatewayError extends Error {
  readonly code: ErrorCode
  readonly details: GatewayErrorDetails

  constructor (code: ErrorCode, details: GatewayErrorDetails = {}) {
    super(details.detail ? `${code}: ${details.detail}` : code, details.cause === undefined ? undefined : { cause: details.cause })
    this.name = 'GatewayError'
    this.code = code
    this.details = details
  }
}

export function gatewayError (code: ErrorCode, details: GatewayErrorDetails = {}): GatewayError {
  return new GatewayError(code, details)
}

export function isGatewayError (err: unknown): err is GatewayError {
  return err instanceof GatewayError
}
