import type { EnvelopeKind } from '../config/types.js'
import type { CatalogueEntry, Catalogue } from './catalogue.js'
import type { BillingStatus } from './gateway-error.js'

export interface ErrorOccurrence {
  entry: CatalogueEntry
  requestId: string
  billing: BillingStatus
  message: string
  param: string | null
  retryAfterSeconds: number | undefined
  /** Answer with `Connection: close` (a body refused before it was all read). */
  closeConnection?: boolean
  /** Extra identifiers of this occurrence (GatewayErrorDetails.fields). */
  fields?: Readonly<Record<string, string>>
}

export interface RenderedError {
  status: number
  headers: Record<string, string>
  body: string
}

/** `X-Gateway-Billed` from the billing status of an error. */
export function billedHeader (billing: BillingStatus): string {
  switch (billing) {
    case 'BILLED': return 'true'
    case 'NOT_BILLED': return 'false'
    case 'PENDING': return 'pending'
    default: return 'unknown'
  }
}

function retryObject (o: ErrorOccurrence): Record<string, unknown> {
  const retry: Record<string, unknown> = { retryable: o.entry.retryable, strategy: o.entry.strategy }
  if (o.retryAfterSeconds !== undefined) retry.retry_after_seconds = o.retryAfterSeconds
  return retry
}

/** The error object shared by the chat envelope and the mid-stream `event: error` frame. */
export function errorObject (o: ErrorOccurrence, kind: EnvelopeKind): Record<string, unknown> {
  return {
    code: o.entry.code,
    message: o.message,
    reference: o.entry.reference,
    documentation_url: o.entry.documentationUrl,
    request_id: o.requestId,
    retry: retryObject(o),
    billing: { status: o.billing },
    type: o.entry.type[kind],
    param: o.param,
    ...o.fields
  }
}

export function envelopeBody (o: ErrorOccurrence, kind: EnvelopeKind, catalogue: Catalogue): unknown {
  switch (kind) {
    case 'chat':
      return { error: errorObject(o, 'chat') }
    case 'messages':
      return {
        type: 'error',
        error: {
          type: o.entry.type.messages,
          code: o.entry.code,
          message: o.message,
          reference: o.entry.reference,
          documentation_url: o.entry.documentationUrl,
          request_id: o.requestId,
          retry: retryObject(o),
          billing: { status: o.billing },
          ...o.fields
        },
        request_id: o.requestId
      }
    case 'genai':
      return {
        error: {
          code: o.entry.status,
          status: o.entry.code,
          message: o.message,
          details: [
            {
              '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
              reason: o.entry.code,
              domain: catalogue.domain,
              metadata: {
                reference: o.entry.reference,
                documentation_url: o.entry.documentationUrl,
                request_id: o.requestId,
                retryable: String(o.entry.retryable),
                retry_strategy: o.entry.strategy,
                billing_status: o.billing,
                ...o.fields
              }
            },
            {
              '@type': 'type.googleapis.com/google.rpc.Help',
              links: [{ description: `${o.entry.reference} ${o.entry.code}`, url: o.entry.documentationUrl }]
            }
          ]
        }
      }
  }
}

export function errorHeaders (o: ErrorOccurrence, catalogue: Catalogue): Record<string, string> {
  const headers: Record<string, string> = {
    'content-type': 'application/json; charset=utf-8',
    'x-request-id': o.requestId,
    'x-gateway-error-code': o.entry.code,
    'x-gateway-error-reference': o.entry.reference,
    link: o.entry.link,
    'content-language': catalogue.contentLanguage,
    'x-gateway-billed': billedHeader(o.billing),
    'cache-control': 'no-store'
  }
  if (o.retryAfterSeconds !== undefined) headers['retry-after'] = String(o.retryAfterSeconds)
  if (o.closeConnection === true) headers.connection = 'close'
  return headers
}

export function renderError (o: ErrorOccurrence, kind: EnvelopeKind, catalogue: Catalogue): RenderedError {
  return {
    status: o.entry.status,
    headers: errorHeaders(o, catalogue),
    body: JSON.stringify(envelopeBody(o, kind, catalogue))
  }
}

/** The SSE frame sent when a stream fails after its headers went out. */
export function errorFrame (o: ErrorOccurrence, kind: EnvelopeKind): string {
  return `event: error\ndata: ${JSON.stringify({ error: errorObject(o, kind) })}\n\n`
}
