import { eventJson, firstNonSpace, isRecord, parseCaptured } from './body-reader.js'
import { createJsonScanner, type JsonScanner } from './json-scan.js'
import type { Meter, MeterInput } from './meter-types.js'
import { codePoints, requestChars } from './request-text.js'
import { createSseParser, type SseEvent, type SseParser } from './sse.js'
import { createSseTap, type SseTap } from './sse-tap.js'
import type { StreamState, TokenDialect } from './token-dialects.js'
import { tokensFromChars, tokenUsage, type RawUsage, type Usage } from './usage.js'

/**
 * A JSON answer up to this size is kept (the relay holds its chunks anyway) and parsed whole
 * at the end, which costs far less than scanning it byte by byte; a bigger one is scanned as
 * it streams (see json-scan.ts).
 */
const WHOLE_JSON_MAX_BYTES = 256 * 1024

/** An event of a fast-read stream bigger than this is counted but never parsed (as sse.ts). */
const MAX_EVENT_BYTES = 16 * 1024 * 1024

const BOM_FIRST_BYTE = 0xef

/** Characters of the string values under text keys, at any depth (as json-scan.ts counts them). */
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
          if (textKeys.has(key)) total += codePoints(x)
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
 * generated text seen (output).
 */
export function createTokenMeter (dialect: TokenDialect, input: MeterInput): Meter {
  const state: StreamState = { usage: undefined, textChars: 0 }
  const readEvent = (e: SseEvent): void => {
    const data = eventJson(e.data)
    if (data) dialect.event(e.event, data, state)
  }
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
      const fast = dialect.sse
      if (fast && c !== BOM_FIRST_BYTE) {
        tap = createSseTap({
          textKeys: fast.textKeys,
          parseKeys: fast.parseKeys,
          maxEventBytes: MAX_EVENT_BYTES,
          onParse: (raw) => {
            const p = createSseParser(readEvent)
            p.push(raw)
            p.end()
          }
        })
      } else {
        parser = createSseParser(readEvent)
      }
    }
    return chunk.subarray(at)
  }

  const outputJson = (): { usage: RawUsage | undefined, textChars: number } => {
    if (scanner === null) {
      try {
        const value: unknown = JSON.parse(Buffer.concat(held, heldBytes).toString('utf8'))
        return { usage: dialect.json(capturedOf(value, dialect.capture)), textChars: textUnder(value, dialect.textKeys) }
      } catch {
        // A cut or malformed answer: the scanner keeps what it can read of it.
        scanner = toScanner()
      }
    }
    const scan = scanner.result()
    return { usage: dialect.json(parseCaptured(scan.captured)), textChars: scan.textChars }
  }

  return {
    onChunk: (chunk) => {
      if (mode === 'unknown') {
        const rest = start(chunk)
        if (rest === null) return
        chunk = rest
      }
      if (mode === 'json') {
        if (scanner !== null) {
          scanner.push(chunk)
          return
        }
        held.push(chunk)
        heldBytes += chunk.length
        if (heldBytes > WHOLE_JSON_MAX_BYTES) scanner = toScanner()
      } else if (tap !== null) {
        tap.push(chunk)
      } else {
        parser?.push(chunk)
      }
    },
    finish: (): Usage => {
      const inputTokens = tokensFromChars(requestChars(input.request))
      if (mode === 'json') {
        const out = outputJson()
        return tokenUsage(out.usage, { inputTokens, outputTokens: tokensFromChars(out.textChars) })
      }
      let fastChars = 0
      if (tap !== null) {
        const t: SseTap = tap
        t.end()
        fastChars = t.textChars()
      } else {
        parser?.end()
      }
      const textChars = state.textChars + fastChars
      return tokenUsage(state.usage, { inputTokens, outputTokens: tokensFromChars(textChars) })
    }
  }
}
