// What crosses the gateway between a client and a provider besides the body: request headers
// and query parameters going up, response headers coming back. Each provider lists what it may
// receive and send (gateway.yaml `providers.<name>.allow_*`); everything else is dropped, so a
// header a tenant invents (`openai-organization`, `anthropic-beta`, `x-forwarded-for`, ...)
// never reaches the operator's provider account, and a provider's own account headers
// (`openai-organization`, rate-limit counters) never reach the tenant.
//
// The lists are compiled once into Sets of lower-case names; a request walks the (short) list,
// not every header it carries.
import type { ProviderConfig } from '../../foundation/config/types.js'

export interface ProviderAllowLists {
  /** Client request headers forwarded to this provider. */
  readonly requestHeaders: readonly string[]
  /** Provider response headers passed back to the client. */
  readonly responseHeaders: readonly string[]
  /** Query parameter names (decoded, lower-case) forwarded to this provider. */
  readonly queryParams: ReadonlySet<string>
}

/**
 * Hop-by-hop headers (RFC 9110 §7.6.1) and ones undici, Node or the gateway set themselves:
 * never copied in either direction, even when an operator lists them.
 */
export const NEVER_COPIED: ReadonlySet<string> = new Set([
  'connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'te', 'trailer', 'upgrade',
  'host', 'content-length', 'accept-encoding', 'expect', 'http2-settings'
])

/** Response headers Node frames itself; content-length is kept, the body passes byte for byte. */
const NEVER_RETURNED: ReadonlySet<string> = new Set([
  'connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'te', 'trailer', 'upgrade'
])

const lower = (names: readonly string[] | undefined): string[] => [...new Set((names ?? []).map((n) => n.toLowerCase()))]

export function compileAllowLists (p: Pick<ProviderConfig, 'allow_request_headers' | 'allow_response_headers' | 'allow_query_params'>): ProviderAllowLists {
  return Object.freeze({
    requestHeaders: Object.freeze(lower(p.allow_request_headers).filter((n) => !NEVER_COPIED.has(n))),
    responseHeaders: Object.freeze(lower(p.allow_response_headers).filter((n) => !NEVER_RETURNED.has(n))),
    queryParams: new Set(lower(p.allow_query_params))
  })
}

export interface RequestHeaderFilter {
  /** Lower-case header names never sent upstream (client credentials), whatever a list says. */
  readonly strip: ReadonlySet<string>
}

/**
 * The headers of one upstream request: the provider's allowed client headers (minus key
 * headers and any the client named in `Connection`), identity encoding, the body's content
 * type, then the provider's own headers (credentials), which win.
 */
export function upstreamRequestHeaders (
  client: Readonly<Record<string, string | string[] | undefined>>,
  filter: RequestHeaderFilter,
  provider: { readonly allow: ProviderAllowLists, readonly headers: Readonly<Record<string, string>> },
  contentType: string | undefined
): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {}
  const connection = client.connection
  for (const name of provider.allow.requestHeaders) {
    const value = client[name]
    if (value === undefined || filter.strip.has(name)) continue
    // A header the client declared hop-by-hop is meant for the gateway, not the provider.
    if (typeof connection === 'string' && connectionLists(connection, name)) continue
    out[name] = value
  }
  // Usage is read from the response bytes, so they must arrive uncompressed.
  out['accept-encoding'] = 'identity'
  if (contentType !== undefined) out['content-type'] = contentType
  const own = provider.headers
  for (const name in own) out[name] = own[name] as string
  return out
}

function connectionLists (connection: string, name: string): boolean {
  const lowered = connection.toLowerCase()
  if (!lowered.includes(name)) return false
  return lowered.split(',').some((token) => token.trim() === name)
}

/**
 * The client's answer headers: the provider's allowed ones, its request id renamed to
 * `x-upstream-request-id` (the gateway's own X-Request-ID names the occurrence), then the
 * gateway's own headers, which win.
 */
export function clientResponseHeaders (
  upstream: Readonly<Record<string, string | string[] | undefined>>,
  own: Readonly<Record<string, string>>,
  allow: ProviderAllowLists
): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {}
  for (const name of allow.responseHeaders) {
    const value = upstream[name]
    if (value !== undefined) out[name] = value
  }
  const upstreamId = upstream['x-request-id'] ?? upstream['request-id']
  if (typeof upstreamId === 'string') out['x-upstream-request-id'] = upstreamId
  for (const name in own) out[name] = own[name] as string
  return out
}

/**
 * The query string sent upstream: only parameters whose name, percent-decoded and lower-cased,
 * the provider allows and the operation declares, when given (operations.<name>.query: it names the values
 * that keep the answer meterable, and the features plugin refused any other value), so `?KEY=`,
 * `?k%65y=` or `?%6Bey=` cannot smuggle a key (or anything else) past a name check. A kept
 * parameter goes out under its canonical name, value as sent.
 */
export function forwardedQuery (query: string, allowed: ReadonlySet<string>, declared?: ReadonlyMap<string, unknown>): string {
  if (query.length <= 1 || allowed.size === 0 || declared?.size === 0) return ''
  let out = ''
  for (const pair of query.slice(1).split('&')) {
    if (pair === '') continue
    const eq = pair.indexOf('=')
    const rawName = eq === -1 ? pair : pair.slice(0, eq)
    const name = decodeName(rawName)
    if (name === null || !allowed.has(name) || (declared !== undefined && !declared.has(name))) continue
    // An allowed name is unreserved characters only (schema), so it needs no encoding.
    out += (out === '' ? '?' : '&') + (eq === -1 ? name : name + pair.slice(eq))
  }
  return out
}

/** application/x-www-form-urlencoded name decoding ('+' is a space), lower-cased; null when malformed. */
function decodeName (raw: string): string | null {
  if (!raw.includes('%') && !raw.includes('+')) return raw.toLowerCase()
  try {
    return decodeURIComponent(raw.replace(/\+/g, ' ')).toLowerCase()
  } catch {
    return null
  }
}
