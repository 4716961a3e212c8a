// Checks that run on a request body while it arrives, chunk by chunk, so a hostile body is
// refused before it has all been received or parsed: JSON nesting depth and multipart part
// counts. Pure byte logic, no I/O; read-body.ts drives them.

import { parsePartHeaders } from './multipart-model.js'

const OPEN_BRACE = 0x7b
const OPEN_BRACKET = 0x5b
const CLOSE_BRACE = 0x7d
const CLOSE_BRACKET = 0x5d
const QUOTE = 0x22
const BACKSLASH = 0x5c

/** `[` and `{` bytes in `chunk`, counted up to `enough` (native indexOf, no byte loop). */
function countOpeners (chunk: Buffer, enough: number): number {
  let n = 0
  for (const byte of [OPEN_BRACE, OPEN_BRACKET]) {
    let at = chunk.indexOf(byte)
    while (at !== -1 && n < enough) {
      n++
      at = chunk.indexOf(byte, at + 1)
    }
  }
  return n
}

/**
 * Tracks the object/array nesting of a JSON text across chunks and says when it passes `max`.
 * A body cannot nest deeper than it has `[` and `{` bytes, so until it has more than `max` of
 * them (most bodies never do) the guard only counts them with indexOf; past that it walks the
 * bytes it has seen, then every new one, minding strings and escapes.
 */
export class JsonDepthGuard {
  private openers = 0
  private walking = false
  private depth = 0
  private inString = false
  private escaped = false
  private readonly pending: Buffer[] = []

  constructor (private readonly max: number) {}

  /** False once the nesting went deeper than `max`. */
  push (chunk: Buffer): boolean {
    if (!this.walking) {
      this.openers += countOpeners(chunk, this.max + 1 - this.openers)
      this.pending.push(chunk)
      if (this.openers <= this.max) return true
      this.walking = true
      const seen = this.pending.splice(0)
      for (const c of seen) if (!this.walk(c)) return false
      return true
    }
    return this.walk(chunk)
  }

  private walk (chunk: Buffer): boolean {
    let { depth, inString, escaped } = this
    const max = this.max
    for (let i = 0; i < chunk.length; i++) {
      const b = chunk[i]
      if (inString) {
        if (escaped) escaped = false
        else if (b === BACKSLASH) escaped = true
        else if (b === QUOTE) inString = false
      } else if (b === QUOTE) {
        inString = true
      } else if (b === OPEN_BRACE || b === OPEN_BRACKET) {
        if (++depth > max) return false
      } else if (b === CLOSE_BRACE || b === CLOSE_BRACKET) {
        depth--
      }
    }
    this.depth = depth
    this.inString = inString
    this.escaped = escaped
    return true
  }
}

/**
 * Counts the parts of a multipart body as it arrives, by its boundary delimiters (a boundary
 * never occurs inside a part, RFC 2046), carrying the last bytes of a chunk over to the next so
 * a delimiter split between two chunks still counts once.
 */
export class MultipartPartCounter {
  private readonly needle: Buffer
  private tail: Buffer = Buffer.alloc(0)
  private delimiters = 0

  constructor (boundary: string, private readonly max: number) {
    this.needle = Buffer.from(`--${boundary}`, 'latin1')
  }

  /** Parts begun so far (the closing delimiter opens none). */
  get parts (): number {
    return Math.max(0, this.delimiters - 1)
  }

  /** False once the body has more than `max` parts. */
  push (chunk: Buffer): boolean {
    const keep = this.needle.length - 1
    const hay = this.tail.length > 0 ? Buffer.concat([this.tail, chunk]) : chunk
    let at = hay.indexOf(this.needle)
    let after = 0
    while (at !== -1) {
      this.delimiters++
      after = at + this.needle.length
      at = hay.indexOf(this.needle, after)
    }
    // Bytes that may begin a delimiter the next chunk completes (never re-count a found one).
    const from = Math.max(after, hay.length - keep)
    this.tail = Buffer.from(hay.subarray(from))
    return this.parts <= this.max
  }
}

const CRLF_BYTES = Buffer.from('\r\n')
const HEADER_END = Buffer.from('\r\n\r\n')
/** A part's header block longer than this is left to the parser after the read (it refuses malformed bodies). */
const MAX_HEADER_BLOCK = 16 * 1024

type ItemState = 'start' | 'delimiter' | 'headers' | 'content' | 'off'

/**
 * Follows the parts of a multipart body as it arrives and says when a file part named in
 * `caps` (the route's `item_limits`, by field) has more content bytes than its cap, so an
 * over-cap upload is refused without reading the rest of it. Content bytes are counted up to
 * the next delimiter (CRLF `--boundary`); the last bytes of a chunk that may begin one are
 * carried to the next. A body it cannot follow (a header block over 16 KiB) is left to the
 * parser after the read.
 */
export class MultipartItemGuard {
  private readonly first: Buffer
  private readonly delimiter: Buffer
  private pending: Buffer = Buffer.alloc(0)
  private state: ItemState = 'start'
  private cap: number | undefined
  private size = 0
  /** The field whose file went over its cap, once push returned false. */
  field = ''
  private current = ''

  constructor (boundary: string, private readonly caps: Readonly<Record<string, number>>) {
    this.first = Buffer.from(`--${boundary}`, 'latin1')
    this.delimiter = Buffer.from(`\r\n--${boundary}`, 'latin1')
  }

  /** False once a capped file part went over its cap. */
  push (chunk: Buffer): boolean {
    if (this.state === 'off') return true
    let buf = this.pending.length > 0 ? Buffer.concat([this.pending, chunk]) : chunk
    for (;;) {
      if (this.state === 'start') {
        const at = buf.indexOf(this.first)
        if (at === -1) { this.keep(buf, this.first.length - 1); return true }
        buf = buf.subarray(at + this.first.length)
        this.state = 'delimiter'
      }
      if (this.state === 'delimiter') {
        if (buf.length < 2) { this.keep(buf, buf.length); return true }
        if (buf[0] === 0x2d && buf[1] === 0x2d) { this.state = 'off'; this.pending = Buffer.alloc(0); return true }
        const eol = buf.indexOf(CRLF_BYTES)
        if (eol === -1) {
          if (buf.length > 1024) { this.state = 'off'; return true }
          this.keep(buf, buf.length)
          return true
        }
        buf = buf.subarray(eol)
        this.state = 'headers'
      }
      if (this.state === 'headers') {
        // `buf` starts at the CRLF that ends the delimiter line; the block ends at CRLF CRLF.
        const end = buf.indexOf(HEADER_END)
        if (end === -1) {
          if (buf.length > MAX_HEADER_BLOCK) { this.state = 'off'; return true }
          this.keep(buf, buf.length)
          return true
        }
        this.startPart(buf.toString('utf8', 2, end))
        buf = buf.subarray(end + HEADER_END.length)
        this.state = 'content'
      }
      // content
      const next = buf.indexOf(this.delimiter)
      if (next === -1) {
        const counted = Math.max(0, buf.length - (this.delimiter.length - 1))
        this.size += counted
        this.keep(buf, buf.length - counted)
        return !this.over()
      }
      this.size += next
      if (this.over()) return false
      buf = buf.subarray(next + this.delimiter.length)
      this.state = 'delimiter'
    }
  }

  private over (): boolean {
    if (this.cap === undefined || this.size <= this.cap) return false
    this.field = this.current
    return true
  }

  /** Keeps the last `n` bytes of `buf` (a copy, so the chunk itself is not retained). */
  private keep (buf: Buffer, n: number): void {
    this.pending = n <= 0 ? Buffer.alloc(0) : Buffer.from(buf.subarray(Math.max(0, buf.length - n)))
  }

  private startPart (block: string): void {
    const h = parsePartHeaders(block)
    const name = h.params.get('name') ?? ''
    // Busboy's rule (multipart.ts): a part with a filename or an octet-stream type is a file.
    const isFile = h.params.has('filename') || h.contentType === 'application/octet-stream'
    this.current = name
    this.cap = isFile ? this.caps[name] : undefined
    this.size = 0
  }
}

/** Runs two chunk guards; `failed` says which one refused. */
export class BothGuards {
  failed: 0 | 1 | 2 = 0
  constructor (private readonly a: { push (chunk: Buffer): boolean }, private readonly b: { push (chunk: Buffer): boolean }) {}
  push (chunk: Buffer): boolean {
    if (!this.a.push(chunk)) { this.failed = 1; return false }
    if (!this.b.push(chunk)) { this.failed = 2; return false }
    return true
  }
}
