// One pass over a server-sent-events stream whose events carry JSON, cheap enough for every
// chunk of every stream. It never decodes or parses an ordinary event: it walks the bytes once,
// following SSE lines (LF, CR or CRLF) and the strings of the JSON in `data:` lines, and
// - counts the UTF-8 bytes of string values under text keys, at any depth (the output estimate
//   when no usage comes), and
// - spots the few events that must be read exactly: those where a parse key (`usage`) holds an
//   object, or where a key is written with escapes (it could be any key once decoded). Their
//   raw bytes go to `onParse`, where the exact path (sse.ts + JSON.parse) reads them; their text
//   is then that path's to count, not this one's.
// With `drop`, the tap also filters the stream: events are passed on whole, in as few pieces as
// the chunks allow, and an event that must be read and that `drop` accepts is left out. An event
// is held only until its blank line arrives, and never beyond `maxEventBytes`: a bigger one is
// passed on as it comes (and cannot be dropped or parsed).

import { escapedBytes, hexValue } from './utf8.js'

const LF = 0x0a
const CR = 0x0d
const QUOTE = 0x22
const BACKSLASH = 0x5c
const COLON = 0x3a
const SPACE = 0x20
const TAB = 0x09
const OPEN_BRACE = 0x7b
const LOWER_U = 0x75
const DATA = [0x64, 0x61, 0x74, 0x61] // "data"

// Where the tap is in the current line.
const LINE_START = 0
const FIELD = 1
const VALUE_START = 2 // after `data:`; one leading space is not part of the value
const VALUE = 3
const SKIP = 4 // comments, `event:`, `id:`, `retry:` and unknown fields

// What a JSON string in a data value is.
const S_KEY = 0 // maybe a key: known once its closing quote is followed by a colon
const S_TEXT = 1 // the value of a text key: its bytes are counted
const S_OTHER = 2 // any other value

// Where the JSON is around the last string.
const J_NONE = 0
const J_AFTER_KEY = 1 // a string that may be a key just closed
const J_VALUE = 2 // a key and its colon were read: the value comes next

/** A key spelled with escapes: it may decode to any key, so the event is read exactly. */
const ODD_KEY = -2
const NO_KEY = -1

export interface SseTapOptions {
  /** Keys whose string values are generated text. */
  textKeys: readonly string[]
  /** Keys whose object value makes an event one to read exactly (usage). */
  parseKeys: readonly string[]
  /** Bytes of one event held at most; a bigger event is never parsed nor dropped. */
  maxEventBytes: number
  /** Receives the raw bytes (lines and line ends) of each event to read exactly. */
  onParse?: (raw: Buffer) => void
  /** Filtering: whether an event to read exactly is left out of the stream. */
  drop?: (raw: Buffer) => boolean
}

export interface SseTap {
  /** Reads one chunk; when filtering, answers the bytes to pass on (else an empty array). */
  push (chunk: Buffer): Buffer[]
  /** Ends the stream: an event without its closing blank line is still handled. */
  end (): Buffer[]
  /** UTF-8 bytes of text in the events not handed to onParse. */
  textBytes (): number
}

const NOTHING: Buffer[] = []

/** The longest envelope kept (bytes from an event's start to its first text value's quote). */
const ENVELOPE_MAX_BYTES = 1024

/**
 * An event's envelope: its bytes from its first one up to the opening quote of its first text
 * value, and the walk's state just after them. The events of one stream repeat their envelope
 * (OpenAI's id, object, created, model, fingerprint, choices and delta before each token;
 * Anthropic's type, index and delta), and the walk is a function of its state and the bytes it
 * reads, with no effect inside an event but on that state. So an event that begins where every
 * event begins after a blank LF line, with the envelope's bytes, leaves the walk in the state
 * after them: it is restored instead of walking them again (a stream of short events was walked
 * at about 3.5 ns a byte, two thirds of it in envelopes).
 */
interface Envelope {
  readonly bytes: Buffer
  readonly line: number
  readonly fieldLen: number
  readonly fieldIsData: boolean
  readonly afterCr: boolean
  readonly crEndedEvent: boolean
  readonly inStr: boolean
  readonly esc: boolean
  readonly hex: number
  readonly hexUnit: number
  readonly kind: number
  readonly keyOdd: boolean
  readonly keySpans: boolean
  readonly jpos: number
  readonly pendingKey: number
  readonly valueKey: number
  readonly touched: boolean
  readonly mustParse: boolean
  readonly broken: boolean
  readonly eventText: number
}

/** Whether `chunk` holds the envelope's bytes from `at`. */
function hasEnvelope (env: Envelope, chunk: Buffer, at: number): boolean {
  const bytes = env.bytes
  const len = bytes.length
  // Compared natively: a loop over its bytes in JavaScript cost about as much as walking them.
  return chunk.length - at >= len && bytes.compare(chunk, at, at + len) === 0
}

/** Known keys and options, shared by the walk of every chunk. */
interface TapSetup {
  keys: Buffer[]
  textKeyCount: number
  maxKeyLen: number
  maxEventBytes: number
  onParse: ((raw: Buffer) => void) | undefined
  drop: ((raw: Buffer) => boolean) | undefined
}

function matchKey (keys: readonly Buffer[], buf: Buffer, start: number, end: number): number {
  const len = end - start
  for (let k = 0; k < keys.length; k++) {
    const key = keys[k] as Buffer
    if (key.length !== len) continue
    let j = 0
    while (j < len && buf[start + j] === key[j]) j++
    if (j === len) return k
  }
  return NO_KEY
}

/**
 * The walk keeps its state in fields between chunks and in locals within one (a class, not
 * closures, so the optimised code of `push` is shared by every stream's tap).
 */
class Tap implements SseTap {
  private readonly setup: TapSetup
  /** Made for the first key cut by a chunk's end (most streams have none). */
  private scratch: Buffer | null = null
  // SSE line
  private line = LINE_START
  private fieldLen = 0
  private fieldIsData = true
  private afterCr = false
  /** The CR before was a blank line's: a LF after it belongs to the event that ended. */
  private crEndedEvent = false
  // JSON strings and keys
  private inStr = false
  private esc = false
  private hex = 0
  private hexUnit = 0
  private kind = S_OTHER
  private keyOdd = false
  /** The key in progress began in an earlier chunk; its bytes so far are in `scratch`. */
  private keySpans = false
  private scratchLen = 0
  private jpos = J_NONE
  private pendingKey = NO_KEY
  private valueKey = NO_KEY
  // the event in progress
  private touched = false
  private mustParse = false
  /** A line ended inside a string: the event's JSON is malformed and its text is not counted. */
  private broken = false
  private eventText = 0
  private pending: Buffer[] = [] // its bytes from earlier chunks
  private pendingBytes = 0
  private tooBig = false
  private passing = false
  private lastDropped = false
  private textTotal = 0
  /** The last envelope recorded, and whether the last chunk ended with a blank LF line. */
  private envelope: Envelope | null = null
  private cleanEnd = false

  constructor (setup: TapSetup) {
    this.setup = setup
  }

  textBytes (): number {
    return this.textTotal
  }

  /** The known key a string ending before `end` of `chunk` spells, if any. */
  private closeKey (chunk: Buffer, keyStart: number, end: number, spans: boolean): number {
    if (!spans) return matchKey(this.setup.keys, chunk, keyStart, end)
    const len = this.scratchLen + end
    if (len > this.setup.maxKeyLen) return NO_KEY
    const scratch = this.scratch ??= Buffer.alloc(this.setup.maxKeyLen)
    chunk.copy(scratch, this.scratchLen, 0, end)
    return matchKey(this.setup.keys, scratch, 0, len)
  }

  /**
   * Ends the event that began at `start` of `chunk` (or in an earlier chunk: see pending) and
   * ends before `end`; answers where the bytes still to pass on now begin.
   */
  private dispatch (chunk: Buffer | null, start: number, end: number, out: Buffer[], runStart: number, mustParse: boolean, countText: number): number {
    const { onParse, drop } = this.setup
    let raw: Buffer | null = null
    if (mustParse && !this.tooBig && (onParse !== undefined || drop !== undefined)) {
      const tail = chunk === null ? null : chunk.subarray(start, end)
      raw = this.pending.length === 0 ? tail : Buffer.concat(tail === null ? this.pending : [...this.pending, tail])
    }
    if (raw !== null && onParse !== undefined) onParse(raw)
    else this.textTotal += countText
    let dropped = false
    if (drop !== undefined) {
      dropped = raw !== null && !this.passing && drop(raw)
      if (dropped) {
        if (chunk !== null && start > runStart) out.push(chunk.subarray(runStart, start))
        runStart = end
      } else {
        // Held from earlier chunks; the rest of the event is in this chunk's run.
        for (const piece of this.pending) out.push(piece)
      }
    }
    this.lastDropped = dropped
    this.pending = []
    this.pendingBytes = 0
    this.tooBig = false
    this.passing = false
    return runStart
  }

  push (chunk: Buffer): Buffer[] {
    const { keys, textKeyCount, maxKeyLen, maxEventBytes, drop } = this.setup
    const filtering = drop !== undefined
    const out = filtering ? [] : NOTHING
    const n = chunk.length
    let eventStart = 0
    let runStart = 0
    let keyStart = 0
    let line = this.line
    let fieldLen = this.fieldLen
    let fieldIsData = this.fieldIsData
    let afterCr = this.afterCr
    let crEndedEvent = this.crEndedEvent
    let inStr = this.inStr
    let esc = this.esc
    let hex = this.hex
    let hexUnit = this.hexUnit
    let kind = this.kind
    let keyOdd = this.keyOdd
    let keySpans = this.keySpans
    let jpos = this.jpos
    let pendingKey = this.pendingKey
    let valueKey = this.valueKey
    let touched = this.touched
    let mustParse = this.mustParse
    let broken = this.broken
    let eventText = this.eventText
    // Where an event begins in the state every event begins in after a blank LF line, and the
    // start of the event in progress when it began so (else -1): its envelope may be recorded.
    let cleanAt = this.cleanEnd ? 0 : -1
    let envelopeFrom = cleanAt
    for (let i = 0; i < n; i++) {
      if (i === cleanAt) {
        const env = this.envelope
        if (env !== null && hasEnvelope(env, chunk, i)) {
          line = env.line
          fieldLen = env.fieldLen
          fieldIsData = env.fieldIsData
          afterCr = env.afterCr
          crEndedEvent = env.crEndedEvent
          inStr = env.inStr
          esc = env.esc
          hex = env.hex
          hexUnit = env.hexUnit
          kind = env.kind
          keyOdd = env.keyOdd
          keySpans = env.keySpans
          jpos = env.jpos
          pendingKey = env.pendingKey
          valueKey = env.valueKey
          touched = env.touched
          mustParse = env.mustParse
          broken = env.broken
          eventText = env.eventText
          envelopeFrom = -1
          i += env.bytes.length - 1
          continue
        }
      }
      let c = chunk[i] as number
      if (afterCr) {
        afterCr = false
        if (c === LF) {
          // The LF of a CRLF belongs to the line the CR ended (and to its event).
          if (crEndedEvent && eventStart === i) {
            eventStart = i + 1
            if (this.lastDropped && runStart === i) runStart = i + 1
          }
          continue
        }
      }
      if (c === LF || c === CR) {
        // Lines are framed before anything is read inside them, as an SSE parser does.
        const blank = line === LINE_START
        if (blank) {
          // A blank line ends the event.
          runStart = this.dispatch(chunk, eventStart, i + 1, out, runStart, mustParse, broken ? 0 : eventText)
          touched = false
          mustParse = false
          broken = false
          eventText = 0
          jpos = J_NONE
          eventStart = i + 1
          // After a CR the walk is not in that state: the next LF may belong to this event.
          cleanAt = envelopeFrom = c === LF ? i + 1 : -1
        } else {
          if (inStr) broken = true // a line cannot end inside a JSON string
          line = LINE_START
        }
        inStr = false
        esc = false
        hex = 0
        if (c === CR) {
          afterCr = true
          crEndedEvent = blank
        }
        continue
      }
      if (line === VALUE) {
        if (inStr) {
          if (hex > 0) {
            hexUnit = hexUnit * 16 + hexValue(c)
            if (--hex === 0 && kind === S_TEXT) eventText += escapedBytes(hexUnit)
            continue
          }
          if (esc) {
            esc = false
            if (c === LOWER_U) {
              hex = 4
              hexUnit = 0
            } else if (kind === S_TEXT) {
              eventText++
            }
            continue
          }
          // The string's plain bytes, in one tight loop.
          if (kind === S_TEXT) {
            while (c !== QUOTE && c !== BACKSLASH && c !== LF && c !== CR) {
              // Bytes, not characters: a token is at least one byte of the text (utf8.ts).
              eventText++
              if (++i === n) break
              c = chunk[i] as number
            }
          } else {
            while (c !== QUOTE && c !== BACKSLASH && c !== LF && c !== CR) {
              if (++i === n) break
              c = chunk[i] as number
            }
          }
          if (i === n) break
          if (c === QUOTE) {
            inStr = false
            if (kind === S_KEY) {
              if (keyOdd) pendingKey = ODD_KEY
              else if (keySpans) pendingKey = this.closeKey(chunk, 0, i, true)
              else pendingKey = i - keyStart > maxKeyLen ? NO_KEY : matchKey(keys, chunk, keyStart, i)
              jpos = J_AFTER_KEY
            }
          } else if (c === BACKSLASH) {
            esc = true
            if (kind === S_KEY) keyOdd = true
          } else {
            i-- // a line end: read it again at the top of the loop
          }
          continue
        }
        if (jpos === J_NONE) {
          // Between strings with no key just read, only a quote or a line end matters: the
          // punctuation, numbers and literals in between are passed over in one tight loop.
          while (c !== QUOTE && c !== LF && c !== CR) {
            if (++i === n) break
            c = chunk[i] as number
          }
          if (i === n) break
          if (c !== QUOTE) {
            i-- // a line end: read it again at the top of the loop
            continue
          }
        } else {
          if (c === SPACE || c === TAB) continue
          if (jpos === J_AFTER_KEY) {
            jpos = J_NONE
            if (c === COLON) {
              if (pendingKey === ODD_KEY) mustParse = true
              jpos = J_VALUE
              valueKey = pendingKey
              continue
            }
          } else {
            // J_VALUE: a key and its colon were read.
            jpos = J_NONE
            if (c === QUOTE) {
              inStr = true
              kind = valueKey >= 0 && valueKey < textKeyCount ? S_TEXT : S_OTHER
              if (kind === S_TEXT && envelopeFrom !== -1) {
                // The event's first text value: its envelope is recorded (once an event).
                if (i + 1 - envelopeFrom <= ENVELOPE_MAX_BYTES) {
                  this.envelope = {
                    bytes: Buffer.from(chunk.subarray(envelopeFrom, i + 1)),
                    line,
                    fieldLen,
                    fieldIsData,
                    afterCr,
                    crEndedEvent,
                    inStr,
                    esc,
                    hex,
                    hexUnit,
                    kind,
                    keyOdd,
                    keySpans,
                    jpos,
                    pendingKey,
                    valueKey,
                    touched,
                    mustParse,
                    broken,
                    eventText
                  }
                }
                envelopeFrom = -1
              }
              continue
            }
            if (c === OPEN_BRACE && valueKey >= textKeyCount) mustParse = true
          }
        }
        // A quote here opens a string that may be a key.
        if (c === QUOTE) {
          inStr = true
          kind = S_KEY
          keyStart = i + 1
          keySpans = false
          keyOdd = false
        }
        continue
      }
      if (line === LINE_START) {
        touched = true
        line = FIELD
        fieldLen = 0
        fieldIsData = true
      }
      if (line === FIELD) {
        if (c === COLON) {
          line = fieldIsData && fieldLen === 4 ? VALUE_START : SKIP
        } else {
          if (fieldIsData && (fieldLen >= 4 || c !== DATA[fieldLen])) fieldIsData = false
          fieldLen++
        }
        continue
      }
      if (line === VALUE_START) {
        line = VALUE
        if (c !== SPACE) i-- // the value's first byte: read it again as a value byte
      }
      // SKIP: the rest of the line does not matter.
    }

    this.cleanEnd = cleanAt === n
    if (inStr && kind === S_KEY) {
      // A key cut by the chunk's end: keep its bytes so far while it may still be a known one.
      const from = keySpans ? 0 : keyStart
      const have = keySpans ? this.scratchLen : 0
      const len = have + n - from
      if (len <= maxKeyLen) chunk.copy(this.scratch ??= Buffer.alloc(maxKeyLen), have, from, n)
      this.scratchLen = len
      keySpans = true
    }
    this.line = line
    this.fieldLen = fieldLen
    this.fieldIsData = fieldIsData
    this.afterCr = afterCr
    this.crEndedEvent = crEndedEvent
    this.inStr = inStr
    this.esc = esc
    this.hex = hex
    this.hexUnit = hexUnit
    this.kind = kind
    this.keyOdd = keyOdd
    this.keySpans = keySpans
    this.jpos = jpos
    this.pendingKey = pendingKey
    this.valueKey = valueKey
    this.touched = touched
    this.mustParse = mustParse
    this.broken = broken
    this.eventText = eventText

    // The event in progress: its bytes are held (for parsing or dropping) up to the limit.
    if (this.passing) {
      if (n > runStart) out.push(chunk.subarray(runStart, n))
      return out
    }
    if (filtering && eventStart > runStart) out.push(chunk.subarray(runStart, eventStart))
    if (eventStart < n && !this.tooBig) {
      this.pending.push(eventStart === 0 ? chunk : chunk.subarray(eventStart))
      this.pendingBytes += n - eventStart
      if (this.pendingBytes > maxEventBytes) {
        this.tooBig = true
        if (filtering) {
          for (const piece of this.pending) out.push(piece)
          this.passing = true
        }
        this.pending = []
        this.pendingBytes = 0
      }
    }
    return out
  }

  end (): Buffer[] {
    const out: Buffer[] = []
    if (this.touched || this.pending.length > 0) {
      this.dispatch(null, 0, 0, out, 0, this.mustParse, this.broken ? 0 : this.eventText)
      this.touched = false
      this.mustParse = false
      this.broken = false
      this.eventText = 0
      this.inStr = false
    }
    return this.setup.drop !== undefined ? out : NOTHING
  }
}

/** The keys as bytes, made once per pair of key lists (a dialect's are constants). */
const keysOf = new WeakMap<readonly string[], WeakMap<readonly string[], { keys: Buffer[], maxKeyLen: number }>>()

export function createSseTap (o: SseTapOptions): SseTap {
  const byParse = keysOf.get(o.textKeys) ?? new WeakMap()
  keysOf.set(o.textKeys, byParse)
  let known = byParse.get(o.parseKeys)
  if (known === undefined) {
    const keys = [...o.textKeys, ...o.parseKeys].map((k) => Buffer.from(k, 'utf8'))
    known = { keys, maxKeyLen: Math.max(0, ...keys.map((k) => k.length)) }
    byParse.set(o.parseKeys, known)
  }
  return new Tap({
    keys: known.keys,
    textKeyCount: o.textKeys.length,
    maxKeyLen: known.maxKeyLen,
    maxEventBytes: o.maxEventBytes,
    onParse: o.onParse,
    drop: o.drop
  })
}
