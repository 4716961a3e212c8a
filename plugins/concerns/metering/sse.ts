// Incremental server-sent-events parser (the WHATWG event-stream grammar) over raw bytes.
// Lines are kept as byte slices until their terminator arrives and only then decoded, so a
// multi-byte UTF-8 character or a `\r\n` split across two chunks is read correctly; nothing is
// held beyond the line and event in progress.

export interface SseEvent {
  /** The `event:` field, or null when the event had none (the spec's default "message"). */
  event: string | null
  /** The `data:` lines joined with `\n`. */
  data: string
}

export interface SseParser {
  push (chunk: Buffer): void
  /** Ends the stream: a last event not yet closed by a blank line is still delivered. */
  end (): void
}

export interface SseParserOptions {
  /** An event bigger than this is skipped whole instead of held (default 16 MiB). */
  maxEventBytes?: number
}

const LF = 0x0a
const CR = 0x0d
const COLON = 0x3a
const SPACE = 0x20

export function createSseParser (onEvent: (e: SseEvent) => void, options: SseParserOptions = {}): SseParser {
  const maxEventBytes = options.maxEventBytes ?? 16 * 1024 * 1024
  let pieces: Buffer[] = [] // the line in progress, when it spans chunks
  let pieceBytes = 0
  let lineDropped = false // the line in progress was too big and is not kept
  let eventName: string | null = null
  let data: string[] = []
  let hasData = false
  let eventBytes = 0
  let discarding = false
  let skipLf = false // the last chunk ended with CR: a leading LF belongs to it
  let atStart = true

  const dispatch = (): void => {
    if (hasData && !discarding) onEvent({ event: eventName, data: data.join('\n') })
    eventName = null
    data = []
    hasData = false
    eventBytes = 0
    discarding = false
  }

  const discard = (): void => {
    discarding = true
    data = []
    hasData = false
  }

  const field = (line: Buffer): void => {
    if (line[0] === COLON) return // comment
    const colon = line.indexOf(COLON)
    const nameEnd = colon === -1 ? line.length : colon
    let valueStart = colon === -1 ? line.length : colon + 1
    if (line[valueStart] === SPACE) valueStart++
    if (nameEnd === 4 && line.toString('latin1', 0, 4) === 'data') {
      data.push(line.toString('utf8', valueStart))
      hasData = true
    } else if (nameEnd === 5 && line.toString('latin1', 0, 5) === 'event') {
      eventName = line.toString('utf8', valueStart)
    }
    // `id`, `retry` and unknown fields do not matter for metering.
  }

  const line = (chunk: Buffer, start: number, end: number): void => {
    let bytes = chunk.subarray(start, end)
    if (pieces.length > 0) {
      pieces.push(bytes)
      bytes = Buffer.concat(pieces, pieceBytes + bytes.length)
      pieces = []
      pieceBytes = 0
    }
    const dropped = lineDropped
    lineDropped = false
    if (atStart) {
      atStart = false
      if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) bytes = bytes.subarray(3)
    }
    if (bytes.length === 0 && !dropped) {
      dispatch()
      return
    }
    if (discarding || dropped) return
    eventBytes += bytes.length
    if (eventBytes > maxEventBytes) {
      discard()
      return
    }
    field(bytes)
  }

  const hold = (piece: Buffer): void => {
    if (piece.length === 0) return
    if (lineDropped || discarding) {
      lineDropped = true
      return
    }
    pieces.push(piece)
    pieceBytes += piece.length
    if (eventBytes + pieceBytes > maxEventBytes) {
      pieces = []
      pieceBytes = 0
      lineDropped = true
      discard()
    }
  }

  return {
    push (chunk: Buffer): void {
      if (chunk.length === 0) return
      let pos = 0
      if (skipLf) {
        skipLf = false
        if (chunk[0] === LF) pos = 1
      }
      const n = chunk.length
      // Lone CRs are rare; search for them only when the chunk has one, and remember where.
      let cr = chunk.indexOf(CR, pos)
      while (pos < n) {
        const lf = chunk.indexOf(LF, pos)
        if (cr !== -1 && cr < pos) cr = chunk.indexOf(CR, pos)
        if (lf === -1 && cr === -1) {
          hold(chunk.subarray(pos))
          return
        }
        if (cr !== -1 && (lf === -1 || cr < lf)) {
          line(chunk, pos, cr)
          if (cr + 1 === n) {
            skipLf = true
            return
          }
          pos = chunk[cr + 1] === LF ? cr + 2 : cr + 1
        } else {
          line(chunk, pos, lf)
          pos = lf + 1
        }
      }
    },
    end (): void {
      if (pieces.length > 0 || lineDropped) line(Buffer.alloc(0), 0, 0)
      dispatch()
    }
  }
}
