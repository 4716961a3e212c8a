import type { Dispatcher } from 'undici'
import { gatewayError, GatewayError, type ErrorCode } from '../../foundation/errors/index.js'
import type { CompiledProvider } from './providers.js'
import type { CancelSignal } from './cancel-signal.js'

// Which client headers go upstream is the provider's allow-list (allow-lists.ts).
export { upstreamRequestHeaders, type RequestHeaderFilter } from './allow-lists.js'

const UNREACHABLE: ReadonlySet<string> = new Set([
  'ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'ECONNRESET', 'EPIPE',
  'UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_SOCKET', 'UND_ERR_CLOSED', 'UND_ERR_DESTROYED'
])

/**
 * undici failures before the response headers, mapped to catalogue codes in one place: a
 * member that cannot be reached is MODEL_UNAVAILABLE (the model service side; the legacy
 * name is UPSTREAM_POOL_UNAVAILABLE), one that took too long to answer PROVIDER_TIMEOUT.
 */
export function mapUpstreamFailure (err: unknown, clientGone: boolean): GatewayError {
  if (err instanceof GatewayError) return err
  const e = err as { code?: string, name?: string, cause?: { code?: string } }
  const code = e?.code ?? e?.cause?.code
  if (clientGone || e?.name === 'AbortError' || code === 'UND_ERR_ABORTED') {
    return gatewayError('REQUEST_CLIENT_DISCONNECTED', { cause: err })
  }
  if (code === 'UND_ERR_HEADERS_TIMEOUT') return gatewayError('PROVIDER_TIMEOUT', { cause: err })
  if (code !== undefined && UNREACHABLE.has(code)) return gatewayError('MODEL_UNAVAILABLE', { cause: err })
  return gatewayError('UPSTREAM_ERROR', { cause: err })
}

/** The failures of a member (not of the request) that count against its circuit. */
export function countsAgainstMember (code: ErrorCode): boolean {
  return code === 'MODEL_UNAVAILABLE' || code === 'PROVIDER_TIMEOUT' || code === 'UPSTREAM_ERROR'
}

/** Statuses that say the member is unwell (not the request): they count against its circuit. */
export function unhealthyStatus (status: number): boolean {
  return status === 502 || status === 503 || status === 504 || status === 529
}

/**
 * Seconds of an upstream Retry-After header (delta-seconds or an HTTP date), or undefined when
 * absent or unreadable. Capped at a day, so an upstream cannot make clients wait for ever.
 */
export function retryAfterSeconds (value: string | string[] | undefined, now: number): number | undefined {
  const v = Array.isArray(value) ? value[0] : value
  if (v === undefined || v === '') return undefined
  let seconds: number
  if (/^\s*\d+\s*$/.test(v)) seconds = Number(v)
  else {
    const at = Date.parse(v)
    if (Number.isNaN(at)) return undefined
    seconds = Math.ceil((at - now) / 1000)
  }
  if (!Number.isFinite(seconds)) return undefined
  return Math.min(86_400, Math.max(0, seconds))
}

/** Least Retry-After of MODEL_BUSY (the spec: wait at least 5 seconds). */
export const BUSY_RETRY_AFTER_S = 5

/**
 * An upstream answer with a server-side or capacity status, as the gateway's own error:
 * 503/529 (overloaded) MODEL_BUSY with at least 5 s of Retry-After, 504 PROVIDER_TIMEOUT, 429
 * LIMIT_RATE_EXCEEDED with the upstream's Retry-After, 401/403/407 (the gateway's own provider
 * credentials were refused: not the client's doing) and every other 5xx UPSTREAM_ERROR.
 * Null for a status the client caused (relayed with the provider's body).
 */
export function upstreamStatusError (status: number, retryAfter: string | string[] | undefined): GatewayError | null {
  if (status === 503 || status === 529) {
    const after = retryAfterSeconds(retryAfter, Date.now())
    return gatewayError('MODEL_BUSY', { retryAfterSeconds: Math.max(BUSY_RETRY_AFTER_S, after ?? 0) })
  }
  if (status === 504) return gatewayError('PROVIDER_TIMEOUT')
  if (status === 429) {
    const after = retryAfterSeconds(retryAfter, Date.now())
    return gatewayError('LIMIT_RATE_EXCEEDED', after === undefined ? {} : { retryAfterSeconds: after })
  }
  if (status >= 500 || status === 401 || status === 403 || status === 407) return gatewayError('UPSTREAM_ERROR')
  return null
}

/** The catalogue code named in X-Gateway-Error-Code of a relayed upstream 4xx the client caused. */
export function clientErrorCode (status: number): ErrorCode {
  switch (status) {
    case 404: return 'MODEL_NOT_FOUND'
    case 408: return 'REQUEST_TIMEOUT'
    case 413: return 'REQUEST_TOO_LARGE'
    case 415: return 'REQUEST_MEDIA_TYPE_UNSUPPORTED'
    default: return 'REQUEST_INVALID'
  }
}

export interface UpstreamCall {
  provider: CompiledProvider
  method: string
  /** Path and query, already joined with the provider's base path. */
  path: string
  headers: Record<string, string | string[]>
  body: Buffer | undefined
  /** The wait for the response headers, ms: the provider's timeout_ms, or its answer_timeout_ms for a non-streamed answer. */
  headersTimeoutMs: number
  /** Cancels the call (the route's first-byte deadline, a client that left a non-streamed answer's wait). */
  signal?: CancelSignal
}

export async function callUpstream (dispatcher: Dispatcher, call: UpstreamCall): Promise<Dispatcher.ResponseData> {
  return await dispatcher.request({
    origin: call.provider.origin,
    path: call.path,
    method: call.method as Dispatcher.HttpMethod,
    headers: call.headers,
    body: call.body,
    headersTimeout: call.headersTimeoutMs,
    bodyTimeout: call.provider.bodyTimeoutMs,
    // undefined when there is none (undici reads it so): no conditional spread on every call.
    signal: call.signal
  })
}
