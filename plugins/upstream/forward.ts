import type { Dispatcher } from 'undici'
import { gatewayError, GatewayError } from '../errors/index.js'
import type { CompiledProvider } from './providers.js'

// Which client headers go upstream is the provider's allow-list (allow-lists.ts).
export { upstreamRequestHeaders, type RequestHeaderFilter } from './allow-lists.js'

const UNREACHABLE: ReadonlySet<string> = new Set([
  'ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'ECONNRESET', 'EPIPE',
  'UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_SOCKET', 'UND_ERR_CLOSED', 'UND_ERR_DESTROYED'
])

/** undici failures before the response headers, mapped to catalogue codes in one place. */
export function mapUpstreamFailure (err: unknown, clientGone: boolean): GatewayError {
  if (err instanceof GatewayError) return err
  const e = err as { code?: string, name?: string, cause?: { code?: string } }
  const code = e?.code ?? e?.cause?.code
  if (clientGone || e?.name === 'AbortError' || code === 'UND_ERR_ABORTED') {
    return gatewayError('REQUEST_CLIENT_DISCONNECTED', { cause: err })
  }
  if (code === 'UND_ERR_HEADERS_TIMEOUT') return gatewayError('PROVIDER_TIMEOUT', { cause: err })
  if (code !== undefined && UNREACHABLE.has(code)) return gatewayError('UPSTREAM_POOL_UNAVAILABLE', { cause: err })
  return gatewayError('UPSTREAM_ERROR', { cause: err })
}

export interface UpstreamCall {
  provider: CompiledProvider
  method: string
  /** Path and query, already joined with the provider's base path. */
  path: string
  headers: Record<string, string | string[]>
  body: Buffer | undefined
  /** Cancels the call (the route's first-byte deadline). */
  signal?: AbortSignal
}

export async function callUpstream (dispatcher: Dispatcher, call: UpstreamCall): Promise<Dispatcher.ResponseData> {
  return await dispatcher.request({
    origin: call.provider.origin,
    path: call.path,
    method: call.method as Dispatcher.HttpMethod,
    headers: call.headers,
    body: call.body,
    headersTimeout: call.provider.timeoutMs,
    bodyTimeout: call.provider.bodyTimeoutMs,
    ...(call.signal ? { signal: call.signal } : {})
  })
}
