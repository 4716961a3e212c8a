import type { Catalogue } from './catalogue.js'
import type { ErrorCode } from './codes.js'
import type { ErrorOccurrence } from './envelopes.js'
import { isGatewayError, type BillingStatus } from './gateway-error.js'

// Fastify's own client-side failures, mapped once to catalogue codes.
const FASTIFY_CODES: Readonly<Record<string, ErrorCode>> = {
  FST_ERR_CTP_BODY_TOO_LARGE: 'REQUEST_TOO_LARGE',
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'REQUEST_MEDIA_TYPE_UNSUPPORTED',
  FST_ERR_CTP_EMPTY_TYPE: 'REQUEST_MEDIA_TYPE_UNSUPPORTED',
  FST_ERR_CTP_INVALID_TYPE: 'REQUEST_MEDIA_TYPE_UNSUPPORTED',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'REQUEST_INVALID',
  FST_ERR_CTP_INVALID_JSON_BODY: 'REQUEST_INVALID',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'REQUEST_INVALID',
  FST_ERR_BAD_URL: 'REQUEST_INVALID'
}

export interface Classified {
  code: ErrorCode
  /** True when the failure is the gateway's, so it must be logged with its stack. */
  internal: boolean
}

export function classify (err: unknown): Classified {
  if (isGatewayError(err)) return { code: err.code, internal: err.code === 'GATEWAY_INTERNAL_ERROR' }
  const e = err as { code?: unknown, statusCode?: unknown } | null
  const fcode = typeof e?.code === 'string' ? FASTIFY_CODES[e.code] : undefined
  if (fcode) return { code: fcode, internal: false }
  if (typeof e?.statusCode === 'number' && e.statusCode >= 400 && e.statusCode < 500) {
    if (e.statusCode === 413) return { code: 'REQUEST_TOO_LARGE', internal: false }
    if (e.statusCode === 415) return { code: 'REQUEST_MEDIA_TYPE_UNSUPPORTED', internal: false }
    return { code: 'REQUEST_INVALID', internal: false }
  }
  return { code: 'GATEWAY_INTERNAL_ERROR', internal: true }
}

export function toOccurrence (err: unknown, requestId: string, catalogue: Catalogue, billing: BillingStatus = 'NOT_BILLED'): ErrorOccurrence {
  const { code } = classify(err)
  const entry = catalogue.get(code)
  const details = isGatewayError(err) ? err.details : {}
  // Public text comes from the catalogue; a detail is appended only from GatewayError,
  // whose details are written by gateway code and never carry secrets.
  const message = details.detail ? `${entry.message} ${details.detail}` : entry.message
  return {
    entry,
    requestId,
    billing: details.billing ?? billing,
    message,
    param: details.param ?? null,
    retryAfterSeconds: details.retryAfterSeconds ?? entry.retryAfterSeconds,
    ...(details.closeConnection === true ? { closeConnection: true } : {}),
    ...(details.fields !== undefined ? { fields: details.fields } : {})
  }
}
