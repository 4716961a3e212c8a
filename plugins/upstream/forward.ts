import type { Dispatcher } from 'undici'
import { gatewayError, GatewayError } from '../errors/index.js'
import type { CompiledProvider } from './providers.js'

// Hop-by-hop headers (RFC 9110 §7.6.1) and ones undici or the gateway sets itself.
const NEVER_FORWARDED: ReadonlySet<string> = new Set([
  'connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'te', 'trailer', 'upgrade',
  'host', 'content-length', 'accept-encoding', 'expect', 'http2-settings'
])

export interface RequestHeaderFilter {
  /** Lower-case header names never sent upstream (client credentials). */
  readonly strip: ReadonlySet<string>
}

export function upstreamRequestHeaders (
  client: Readonly<Record<string, string | string[] | undefined>>,
  filter: RequestHeaderFilter,
  provider: CompiledProvider,
  contentType: string | undefined
): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {}
  const connectionListed = typeof client.connection === 'string'
    ? new Set(client.connection.toLowerCase().split(',').map((s) => s.trim()))
    : undefined
  for (const [name, value] of Object.entries(client)) {
    if (value === undefined || NEVER_FORWARDED.has(name) || filter.strip.has(name) || connectionListed?.has(name)) continue
    out[name] = value
  }
  // Usage is read from the response bytes, so they must arrive uncompressed.
  out['accept-encoding'] = 'identity'
  if (contentType !== undefined) out['content-type'] = contentType
  for (const [name, value] of Object.entries(provider.headers)) out[name] = value
  return out
}

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
}

export async function callUpstream (dispatcher: Dispatcher, call: UpstreamCall): Promise<Dispatcher.ResponseData> {
  return await dispatcher.request({
    origin: call.provider.origin,
    path: call.path,
    method: call.method as Dispatcher.HttpMethod,
    headers: call.headers,
    body: call.body,
    headersTimeout: call.provider.timeoutMs,
    bodyTimeout: call.provider.bodyTimeoutMs
  })
}
