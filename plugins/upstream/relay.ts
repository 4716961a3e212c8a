import type { ServerResponse } from 'node:http'
import type { Readable, Transform } from 'node:stream'

// Upstream response headers the client never sees: hop-by-hop, cookies of the provider,
// and the provider's request id (the gateway's own X-Request-ID names the occurrence).
const DROPPED: ReadonlySet<string> = new Set([
  'connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'te', 'trailer', 'upgrade',
  'set-cookie', 'x-request-id', 'date', 'server'
])

export function clientResponseHeaders (
  upstream: Readonly<Record<string, string | string[] | undefined>>,
  own: Readonly<Record<string, string>>
): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {}
  for (const [name, value] of Object.entries(upstream)) {
    if (value === undefined || DROPPED.has(name)) continue
    out[name] = value
  }
  const upstreamId = upstream['x-request-id']
  if (typeof upstreamId === 'string') out['x-upstream-request-id'] = upstreamId
  for (const [name, value] of Object.entries(own)) out[name] = value
  return out
}

export type RelayEnd = 'completed' | 'stream_interrupted' | 'client_disconnected'

export interface RelayOptions {
  res: ServerResponse
  status: number
  headers: Record<string, string | string[]>
  body: Readable
  sse: boolean
  /** How long a disconnected client's upstream is still read (for its usage) before it is aborted. */
  drainTimeoutMs: number
  abortUpstream: () => void
  /** Sees every upstream chunk, also after the client left (metering). */
  onChunk?: (chunk: Buffer) => void
  /** Rewrites the bytes on their way to the client (drops the usage chunk the client did not ask for). */
  transform?: Transform
  /** The `event: error` frame to end a broken SSE stream with. */
  errorFrame: () => string
  onEnd: (end: RelayEnd, error?: unknown) => void
}

/**
 * Streams the upstream body to the client chunk by chunk with backpressure. A broken SSE
 * stream ends with an error frame; a client that leaves does not cancel the upstream at once,
 * so the usage it reports can still be read, but only for drainTimeoutMs.
 */
export function relay (o: RelayOptions): void {
  const { res, body, transform } = o
  const out: Readable = transform ? body.pipe(transform) : body
  let ended = false
  let clientGone = false
  let drainTimer: NodeJS.Timeout | undefined
  const finish = (end: RelayEnd, error?: unknown): void => {
    if (ended) return
    ended = true
    if (drainTimer) clearTimeout(drainTimer)
    o.onEnd(end, error)
  }

  if (!res.destroyed) {
    res.writeHead(o.status, o.headers)
    // SSE clients should see the headers before the first token.
    if (o.sse) res.flushHeaders()
    out.pipe(res)
  }
  if (o.onChunk) body.on('data', o.onChunk)

  // The client's side is done when the bytes it gets (after any transform) are done.
  out.once('end', () => finish(clientGone ? 'client_disconnected' : 'completed'))
  if (transform) body.once('end', () => { if (clientGone) finish('client_disconnected') })
  body.once('error', (err) => {
    if (clientGone) {
      finish('client_disconnected', err)
      return
    }
    out.unpipe(res)
    if (o.sse && !res.writableEnded) res.end(o.errorFrame())
    else res.destroy()
    finish('stream_interrupted', err)
  })
  const onClientGone = (): void => {
    if (ended || res.writableFinished || clientGone) return
    clientGone = true
    out.unpipe(res)
    if (transform) body.unpipe(transform)
    body.resume()
    drainTimer = setTimeout(() => {
      o.abortUpstream()
      finish('client_disconnected')
    }, o.drainTimeoutMs)
    drainTimer.unref()
  }
  // The client may have left while the upstream was still preparing its headers.
  if (res.destroyed) onClientGone()
  else res.once('close', onClientGone)
}
