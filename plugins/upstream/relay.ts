import type { ServerResponse } from 'node:http'
import type { Readable } from 'node:stream'

export type RelayEnd = 'completed' | 'stream_interrupted' | 'client_disconnected'

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
  /** How long a disconnected client's upstream is still read (for its usage) before it is aborted. */
  drainTimeoutMs: number
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
  /**
   * Awaited after the upstream body ended and before the client gets its answer. With it the
   * (small) answer is held back whole: a client reading a Content-Length body has it all once
   * the last byte is written, whether or not the response was ended.
   */
  beforeEnd?: () => Promise<void>
  onEnd: (end: RelayEnd, error?: unknown) => void
}

/**
 * Streams the upstream body to the client chunk by chunk with back-pressure: one data handler
 * meters each chunk, filters it when needed and writes it, pausing the upstream while the
 * client's socket is full. A broken SSE stream ends with an error frame; a client that leaves
 * does not cancel the upstream at once, so the usage it reports can still be read, but only
 * for drainTimeoutMs.
 */
export function relay (o: RelayOptions): void {
  const { res, body, filter, onChunk } = o
  let ended = false
  let clientGone = false
  let drainTimer: NodeJS.Timeout | undefined
  const finish = (end: RelayEnd, error?: unknown): void => {
    if (ended) return
    ended = true
    if (drainTimer) clearTimeout(drainTimer)
    o.onEnd(end, error)
  }
  const resume = (): void => { body.resume() }

  const onClientGone = (): void => {
    if (ended || res.writableFinished || clientGone) return
    clientGone = true
    res.off('drain', resume)
    body.resume()
    drainTimer = setTimeout(() => {
      o.abortUpstream()
      finish('client_disconnected')
    }, o.drainTimeoutMs)
    drainTimer.unref()
  }

  // Writes of one event-loop turn leave in one syscall: the socket is corked at the first and
  // uncorked once the turn's I/O is done (or by res.end(), which sends what is corked with the
  // end of the body). Headers leave with the first bytes of the body; an SSE client whose
  // upstream has not sent any yet still gets them at the end of the turn.
  let corked = false
  let wroteBody = false
  const uncork = (): void => {
    if (!corked) return
    corked = false
    if (!res.writableEnded && !res.destroyed) res.uncork()
  }
  const write = (piece: Buffer): boolean => {
    wroteBody = true
    if (!corked) {
      corked = true
      res.cork()
      setImmediate(uncork)
    }
    return res.write(piece)
  }
  if (!res.destroyed) {
    res.writeHead(o.status, o.headers)
    if (o.sse) {
      setImmediate(() => {
        if (!wroteBody && !res.writableEnded && !res.destroyed) res.flushHeaders()
      })
    }
  }

  const heldBack: Buffer[] | null = o.beforeEnd ? [] : null
  body.on('data', (chunk: Buffer) => {
    onChunk?.(chunk)
    const pieces = filter ? filter.push(chunk) : null
    if (clientGone) return
    if (heldBack) {
      if (pieces) heldBack.push(...pieces)
      else heldBack.push(chunk)
      return
    }
    let room = true
    if (pieces) {
      for (const piece of pieces) room = write(piece)
    } else {
      room = write(chunk)
    }
    if (!room) {
      body.pause()
      res.once('drain', resume)
    }
  })
  body.once('end', () => {
    if (clientGone) {
      finish('client_disconnected')
      return
    }
    // What the filter still releases is the stream's last bytes: after anything held back.
    if (filter) {
      const last = filter.end()
      if (heldBack) heldBack.push(...last)
      else for (const piece of last) write(piece)
    }
    const end = (): void => {
      if (heldBack) for (const piece of heldBack) write(piece)
      corked = false
      res.end()
      finish('completed')
    }
    if (o.beforeEnd) o.beforeEnd().then(end, end)
    else end()
  })
  body.once('error', (err) => {
    if (clientGone) {
      finish('client_disconnected', err)
      return
    }
    if (o.sse && !res.writableEnded) res.end(o.errorFrame())
    else res.destroy()
    finish('stream_interrupted', err)
  })
  // The client may have left while the upstream was still preparing its headers.
  if (res.destroyed) onClientGone()
  else res.once('close', onClientGone)
}
