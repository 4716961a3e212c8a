import { eventJson, firstNonSpace, isRecord, parseCaptured } from './body-reader.js'
import type { FeatureReader } from './feature-usage.js'
import { createJsonScanner, type JsonScanner } from './json-scan.js'
import type { Meter, MeterInput } from './meter-types.js'
import { estimateUsage } from './estimate.js'
import { createSseParser, type SseEvent, type SseParser } from './sse.js'
import { createSseTap, type SseTap } from './sse-tap.js'
import type { StreamState, TokenDialect } from './token-dialects.js'
import { createUsageEventFilter, isUsageOnlyEvent, USAGE_EVENT_MAX_BYTES, type ChunkFilter } from './usage-chunk-filter.js'
import { tokenUsage, type RawUsage, type Usage } from './usage.js'
import { utf8Bytes } from './utf8.js'

/**
 * A JSON answer up to this size is kept (the relay holds its chunks anyway) and parsed whole
 * at the end, which costs far less than scanning it byte by byte; a bigger one is scanned as
 * it streams (see json-scan.ts).
 */
const WHOLE_JSON_MAX_BYTES = 256 * 1024

/**
 * With a feature to read from the answer (a request that used one), a JSON answer is parsed
 * whole up to this size (an image generation answer carries its images): beyond it, the
 * features are charged at their worst case.
 */
const FEATURE_JSON_MAX_BYTES = 32 * 1024 * 1024

/** An event of a fast-read stream bigger than this is counted but never parsed (as sse.ts). */
const MAX_EVENT_BYTES = 16 * 1024 * 1024

const BOM_FIRST_BYTE = 0xef

/** UTF-8 bytes of the string values under text keys, at any depth (as json-scan.ts counts them). */
function textUnder (value: unknown, textKeys: ReadonlySet<string>): number {
  let total = 0
  const pending: unknown[] = [value]
  while (pending.length > 0) {
    const v = pending.pop()
    if (Array.isArray(v)) {
      for (const item of v) if (typeof item === 'object' && item !== null) pending.push(item)
    } else if (isRecord(v)) {
      for (const key of Object.keys(v)) {
        const x = v[key]
        if (typeof x === 'string') {
          if (textKeys.has(key)) total += utf8Bytes(x)
        } else if (typeof x === 'object' && x !== null) {
          pending.push(x)
        }
      }
    }
  }
  return total
}

/** The captured keys of the record objects (the root object, or each object of a root array); the last one wins. */
function capturedOf (value: unknown, capture: ReadonlySet<string>): Map<string, unknown> {
  const out = new Map<string, unknown>()
  const records = Array.isArray(value) ? value : [value]
  for (const record of records) {
    if (!isRecord(record)) continue
    for (const key of capture) if (Object.hasOwn(record, key)) out.set(key, record[key])
  }
  return out
}

/**
 * Meters a token-billed text answer, JSON or SSE, in the given dialect; the body's first byte
 * says which. Missing or rejected counts fall back to the request's text (input) and the
 * generated text seen (output), estimated only then (estimate.ts).
 *
 * With `input.dropUsageEvents` it also offers `filter`: the fast tap then filters as it meters
 * (sse-tap's drop), so a chat stream is walked once for both. Its events are then held, and
 * parsed, up to USAGE_EVENT_MAX_BYTES only: a bigger event is passed on as it comes and its
 * text counted, as the filter alone would pass it.
 */
export function createTokenMeter (dialect: TokenDialect, input: MeterInput, features: FeatureReader | null = null): Meter {
  const state: StreamState = { usage: undefined, textBytes: 0 }
  // A request that used a feature is read on the exact path (every event parsed, a JSON answer
  // parsed whole), where the feature reader sees what it needs; every other request keeps the
  // fast one.
  const wholeJsonMax = features === null ? WHOLE_JSON_MAX_BYTES : FEATURE_JSON_MAX_BYTES
  // The event last handed to the tap's onParse and the JSON of its data: the filter's drop,
  // which the tap asks next about the same bytes, decides on that parse.
  let parsedRaw: Buffer | null = null
  let parsedJson: Record<string, unknown> | undefined
  const readEvent = (e: SseEvent): void => {
    const data = eventJson(e.data)
    parsedJson = data
    if (data) {
      dialect.event(e.event, data, state)
      features?.event(data)
    }
  }
  const filtering = input.dropUsageEvents === true
  // A failure while reading an event must not break the walk that passes the stream on.
  let failure: unknown = null
  let mode: 'unknown' | 'json' | 'sse' = 'unknown'
  // JSON: the chunks while the answer is small, then the scanner.
  let held: Buffer[] = []
  let heldBytes = 0
  let scanner: JsonScanner | null = null
  // SSE: the fast tap where the dialect has one, else the exact parser for every event.
  let tap: SseTap | null = null
  let parser: SseParser | null = null

  const toScanner = (): JsonScanner => {
    const s = createJsonScanner({ capture: dialect.capture, textKeys: dialect.textKeys })
    for (const piece of held) s.push(piece)
    held = []
    return s
  }

  const start = (chunk: Buffer): Buffer | null => {
    const at = firstNonSpace(chunk)
    if (at === -1) return null // leading whitespace means nothing in either form
    const c = chunk[at]
    if (c === 0x7b || c === 0x5b) {
      mode = 'json'
    } else {
      mode = 'sse'
      const fast = features === null ? dialect.sse : undefined
      if (fast && c !== BOM_FIRST_BYTE) {
        tap = createSseTap({
          textKeys: fast.textKeys,
          parseKeys: fast.parseKeys,
          maxEventBytes: filtering ? USAGE_EVENT_MAX_BYTES : MAX_EVENT_BYTES,
          onParse: (raw) => {
            parsedRaw = raw
            parsedJson = undefined
            try {
              const p = createSseParser(readEvent)
              p.push(raw)
              p.end()
            } catch (err) {
              failure ??= err
            }
          },
          drop: filtering ? (raw: Buffer) => isUsageOnlyEvent(raw, raw === parsedRaw ? { json: parsedJson } : undefined) : undefined
        })
      } else {
        parser = createSseParser(readEvent)
      }
    }
    return chunk.subarray(at)
  }

  /** The answer's usage, and its text bytes for an estimate (walked only when one is asked for). */
  const outputJson = (): { usage: RawUsage | undefined, textBytes: () => number } => {
    if (scanner === null) {
      try {
        // An answer in one chunk (most small ones) is read where it is, not copied first.
        const whole = held.length === 1 ? held[0] as Buffer : Buffer.concat(held, heldBytes)
        const value: unknown = JSON.parse(whole.toString('utf8'))
        if (features !== null) for (const record of Array.isArray(value) ? value : [value]) features.answer(record)
        return { usage: dialect.json(capturedOf(value, dialect.capture)), textBytes: () => textUnder(value, dialect.textKeys) }
      } catch {
        // A cut or malformed answer: the scanner keeps what it can read of it.
        scanner = toScanner()
      }
    }
    const scan = scanner.result()
    return { usage: dialect.json(parseCaptured(scan.captured)), textBytes: () => scan.textBytes }
  }

  /** Meters a chunk once the mode is known. */
  const meterChunk = (chunk: Buffer): void => {
    if (mode === 'json') {
      if (scanner !== null) {
        scanner.push(chunk)
        return
      }
      held.push(chunk)
      heldBytes += chunk.length
      if (heldBytes > wholeJsonMax) scanner = toScanner()
    } else if (tap !== null) {
      tap.push(chunk)
    } else {
      parser?.push(chunk)
    }
  }

  // Streams the fast tap cannot read (JSON, a BOM, a dialect without a tap) are filtered apart.
  let otherFilter: ChunkFilter | null = null
  // Whitespace before the first byte that tells the stream's form is held until it tells (up
  // to USAGE_EVENT_MAX_BYTES), so the filter then sees the stream whole, as it does alone.
  let leading: Buffer[] = []
  let leadingBytes = 0
  const filter: ChunkFilter = {
    push: (chunk) => {
      if (mode === 'unknown') {
        const rest = start(chunk)
        if (rest === null) {
          leading.push(chunk)
          leadingBytes += chunk.length
          if (leadingBytes <= USAGE_EVENT_MAX_BYTES) return []
          const out = leading
          leading = []
          return out
        }
        if (tap === null) meterChunk(rest)
      } else if (tap === null) {
        meterChunk(chunk)
      }
      const pieces = leading.length === 0 ? [chunk] : [...leading, chunk]
      leading = []
      // The tap meters as it filters; it sees the whole stream, leading whitespace too (SSE
      // reads it as a blank line or a field it ignores), as the filter alone does.
      const t: SseTap | null = tap
      if (t !== null) return pieces.length === 1 ? t.push(chunk) : pieces.flatMap((p) => t.push(p))
      if (mode === 'json') return pieces
      const other = otherFilter ??= createUsageEventFilter()
      return pieces.flatMap((p) => other.push(p))
    },
    end: () => {
      if (leading.length > 0) {
        const out = leading
        leading = []
        return out
      }
      return tap !== null ? tap.end() : otherFilter?.end() ?? []
    }
  }

  return {
    onChunk: (chunk) => {
      if (mode === 'unknown') {
        const rest = start(chunk)
        if (rest === null) return
        chunk = rest
      }
      meterChunk(chunk)
    },
    filter: filtering ? filter : undefined,
    finish: (): Usage => {
      if (failure !== null) throw failure
      // Only a missing or rejected count asks for the estimate (tokenUsage calls it then), and
      // only then are the answer's text bytes counted.
      const estimate = (outputBytes: () => number) => () => estimateUsage(dialect.name, input.request, input.estimate, outputBytes())
      const withFeatures = (usage: Usage): Usage => {
        if (features !== null) usage.features = features.result(usage.reported)
        return usage
      }
      if (mode === 'json') {
        const out = outputJson()
        return withFeatures(tokenUsage(out.usage, estimate(out.textBytes)))
      }
      let fastBytes = 0
      if (tap !== null) {
        const t: SseTap = tap
        t.end()
        fastBytes = t.textBytes()
      } else {
        parser?.end()
      }
      return withFeatures(tokenUsage(state.usage, estimate(() => state.textBytes + fastBytes)))
    }
  }
}
