import type { ServerResponse } from 'node:http'
import type { Readable } from 'node:stream'

/** `client_stalled`: the client read nothing for `writeStallMs` and was cut (see relay). */
export type RelayEnd = 'completed' | 'stream_interrupted' | 'client_disconnected' | 'client_stalled'

/**
 * How a relay's end reads in the request's outcome. A client cut for stalling left like one
 * that disconnected (billed for what the upstream produced); its code says it timed out.
 */
export function relayOutcome (end: RelayEnd): { kind: 'completed' | 'stream_interrupted' | 'client_disconnected', errorCode: string | null } {
  switch (end) {
    case 'completed': return { kind: 'completed', errorCode: null }
    case 'stream_interrupted': return { kind: 'stream_interrupted', errorCode: 'PROVIDER_STREAM_INTERRUPTED' }
    case 'client_disconnected': return { kind: 'client_disconnected', errorCode: 'REQUEST_CLIENT_DISCONNECTED' }
    case 'client_stalled': return { kind: 'client_disconnected', errorCode: 'REQUEST_TIMEOUT' }
  }
}

/**
 * Most bytes read from the upstream after the client left (a drain): enough for any answer's
 * usage report (a non-streamed answer's comes at its end, after images in base64), and a bound
 * on what one gone client makes the gateway download. Past it the upstream is aborted and the
 * request settles on what was metered (an estimate).
 */
export const DRAIN_MAX_BYTES = 64 * 1024 * 1024

/** Rewrites the bytes on their way to the client, chunk by chunk (see metering's usage filter). */
export interface RelayFilter {
  push (chunk: Buffer): Buffer[]
  end (): Buffer[]
}

export interface RelayOptions {
  res: ServerResponse
  status: number
  headers: Record<string, string | string[]>
  body: Readable
  sse: boolean
  /**
   * How long a disconnected client's upstream is still read (for its usage) before it is
   * aborted; 0 (the default of a provider): aborted at once, billed for what was read so far.
   */
  drainTimeoutMs: number
  /**
   * How long the client may leave its socket full (read nothing) before it is cut and treated
   * as gone: its upstream is then read for usage (drainTimeoutMs) or cancelled, and the request
   * settles. 0: never cut (the upstream stays paused as long as the client does).
   */
  writeStallMs: number
  abortUpstream: () => void
  /** Sees every upstream chunk, also after the client left (metering). */
  onChunk?: (chunk: Buffer) => void
  /**
   * Drops the usage chunk the client did not ask for. Also pushed every chunk after the client
   * left (its answer then unused): a meter that filters as it reads needs them all.
   */
  filter?: RelayFilter
  /** The `event: error` frame to end a broken SSE stream with. */
  errorFrame: () => string
  onEnd: (end: RelayEnd, error?: unknown) => void
}

/**
 * Streams the upstream body to the client chunk by chunk with back-pressure: one data handler
 * meters each chunk, filters it when needed and writes it, pausing the upstream while the
 * client's socket is full. A broken SSE stream ends with an error frame; a client that leaves
 * cancels the upstream at once (drainTimeoutMs 0), or, where the provider asks for the drain,
 * the upstream is read on for the usage it reports, but only for drainTimeoutMs and at most
 * DRAIN_MAX_BYTES.
 *
 * The upstream, not the client, decides when the request ends: a client that keeps its socket
 * full for writeStallMs is cut and handled as one that left, so a paused upstream (whose body
 * timeout does not run while paused) cannot keep the request, its hold and its upstream
 * connection open for as long as the client likes. The stall check is one timer per stream,
 * armed only when the client's socket is full and re-armed (refresh) on the next pause.
 */
export function relay (o: RelayOptions): void {
  const { res, body, filter, onChunk } = o
  let ended = false
  let clientGone = false
  // How a client that is gone left: on its own, or cut for stalling.
  let goneAs: RelayEnd = 'client_disconnected'
  let drainTimer: NodeJS.Timeout | undefined
  // Bytes read since the client left (bounded by DRAIN_MAX_BYTES).
  let drained = 0
  // Set while the upstream is paused on a full client socket.
  let waiting = false
  let stallTimer: NodeJS.Timeout | undefined
  const finish = (end: RelayEnd, error?: unknown): void => {
    if (ended) return
    ended = true
    if (drainTimer) clearTimeout(drainTimer)
    if (stallTimer) clearTimeout(stallTimer)
    o.onEnd(end, error)
  }
  const resume = (): void => {
    waiting = false
    body.resume()
  }

  const onClientGone = (): void => {
    if (ended || res.writableFinished || clientGone) return
    clientGone = true
    waiting = false
    res.off('drain', resume)
    if (o.drainTimeoutMs <= 0) {
      // Cancelled now: the provider stops generating. What was read from it but not yet
      // relayed (buffered while the client's socket was full, or arrived this turn) was
      // produced and is billed: read() hands each buffered chunk to the data handler, which
      // meters it (and writes nothing, the client being gone) before the settle.
      if (!body.destroyed) while (body.read() !== null) { /* metered by the data handler */ }
      finish(goneAs)
      o.abortUpstream()
      return
    }
    body.resume()
    drainTimer = setTimeout(() => {
      o.abortUpstream()
      finish(goneAs)
    }, o.drainTimeoutMs)
    drainTimer.unref()
  }

  // The timer fires writeStallMs after the latest pause began; if the client has not drained
  // since (waiting), that pause has lasted the whole bound.
  const onStall = (): void => {
    if (!waiting || ended || clientGone) return
    goneAs = 'client_stalled'
    res.destroy() // 'close' follows: onClientGone reads the upstream's usage, then settles
  }
  const armStall = (): void => {
    waiting = true
    if (o.writeStallMs <= 0) return
    if (stallTimer) {
      stallTimer.refresh()
      return
    }
    stallTimer = setTimeout(onStall, o.writeStallMs)
    stallTimer.unref()
  }

  // The pieces of one event-loop turn are written as one: upstreams send each SSE event as a
  // chunk of its own (24 to a 20-token answer), and each res.write is four socket writes with
  // the chunked framing and a buffered entry apiece. They leave at the end of the turn, as they
  // did when the socket was corked for it, or as soon as the client's high-water mark's worth
  // is waiting: a full socket then pauses the upstream, at most one high-water mark's worth
  // later than a write a chunk did (the queue's, bounded by the mark). Headers leave with
  // the first bytes of the body; an SSE client whose upstream has not sent any yet still gets
  // them at the end of the turn.
  let queued: Buffer[] = []
  let queuedBytes = 0
  let flushing = false
  let wroteBody = false
  /** The turn's pieces as one buffer (null when none), taken off the queue. */
  const takeQueued = (): Buffer | null => {
    if (queued.length === 0) return null
    const data = queued.length === 1 ? queued[0] as Buffer : Buffer.concat(queued, queuedBytes)
    queued = []
    queuedBytes = 0
    return data
  }
  const flush = (): void => {
    const data = takeQueued()
    if (data === null || clientGone || res.writableEnded || res.destroyed) return
    if (!res.write(data) && !waiting) {
      body.pause()
      armStall()
      res.once('drain', resume)
    }
  }
  const flushAtTurnEnd = (): void => {
    flushing = false
    flush()
  }
  const write = (piece: Buffer): void => {
    wroteBody = true
    queued.push(piece)
    queuedBytes += piece.length
    if (queuedBytes >= res.writableHighWaterMark) {
      flush()
    } else if (!flushing) {
      flushing = true
      setImmediate(flushAtTurnEnd)
    }
  }
  if (!res.destroyed) {
    res.writeHead(o.status, o.headers)
    if (o.sse) {
      setImmediate(() => {
        if (!wroteBody && !res.writableEnded && !res.destroyed) res.flushHeaders()
      })
    }
  }

  body.on('data', (chunk: Buffer) => {
    onChunk?.(chunk)
    const pieces = filter ? filter.push(chunk) : null
    if (clientGone) {
      drained += chunk.length
      if (drained > DRAIN_MAX_BYTES && !ended) {
        finish(goneAs)
        o.abortUpstream()
      }
      return
    }
    if (pieces) {
      for (const piece of pieces) write(piece)
    } else {
      write(chunk)
    }
  })
  body.once('end', () => {
    if (clientGone) {
      finish(goneAs)
      return
    }
    // What the filter still releases is the stream's last bytes; they leave with the turn's.
    if (filter) for (const piece of filter.end()) write(piece)
    const last = takeQueued()
    if (last === null) res.end()
    else res.end(last)
    finish('completed')
    cutIfUnread()
  })
  // Settled already; a client that leaves the answer's last bytes unread for the stall bound
  // does not keep its connection and their buffer any longer.
  const cutIfUnread = (): void => {
    // Only a client that is behind (its socket full at the last write) gets a timer.
    if (o.writeStallMs <= 0 || !res.writableNeedDrain || res.writableFinished || res.destroyed) return
    const cut = setTimeout(() => { if (!res.writableFinished) res.destroy() }, o.writeStallMs)
    cut.unref()
    res.once('finish', () => { clearTimeout(cut) })
    res.once('close', () => { clearTimeout(cut) })
  }
  body.once('error', (err) => {
    if (clientGone) {
      finish(goneAs, err)
      return
    }
    if (o.sse && !res.writableEnded) {
      // The events read before the break go first, then the frame that says it broke.
      const before = takeQueued()
      if (before !== null) res.write(before)
      res.end(o.errorFrame())
    } else {
      res.destroy()
    }
    finish('stream_interrupted', err)
  })
  // The client may have left while the upstream was still preparing its headers.
  if (res.destroyed) onClientGone()
  else res.once('close', onClientGone)
}
