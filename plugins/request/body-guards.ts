// Checks that run on a request body while it arrives, chunk by chunk, so a hostile body is
// refused before it has all been received or parsed: JSON nesting depth and multipart part
// counts. Pure byte logic, no I/O; read-body.ts drives them.

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
