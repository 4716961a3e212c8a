// Reads an upstream answer the way its first bytes say it is: a body starting with `{` or `[`
// is JSON (scanned), anything else is an event stream when the meter allows one, or opaque
// bytes (text transcripts, audio) that are only counted. Sniffing rather than trusting the
// Content-Type keeps metering right when a provider mislabels its stream.

import { createJsonScanner, type JsonScanOptions, type JsonScanResult } from './json-scan.js'
import { createSseParser, type SseEvent } from './sse.js'

export type BodyMode = 'unknown' | 'json' | 'sse' | 'raw'

export interface BodyReaderOptions {
  /** Whether a non-JSON body is read as server-sent events (else it is counted only). */
  sse: boolean
  onEvent?: (e: SseEvent) => void
  scan?: JsonScanOptions
  /** Count the characters of a raw body (costs a pass over its bytes). */
  rawChars?: boolean
}

export interface BodyReader {
  push (chunk: Buffer): void
  end (): void
  mode (): BodyMode
  /** Bytes seen. */
  bytes (): number
  /** UTF-8 characters of a raw body, when asked for. */
  rawChars (): number
  /** The JSON scan, when the body was JSON. */
  scan (): JsonScanResult | undefined
}

/** Where the first byte other than JSON whitespace is, or -1. */
export function firstNonSpace (chunk: Buffer): number {
  for (let i = 0; i < chunk.length; i++) {
    const c = chunk[i]
    if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) return i
  }
  return -1
}

function utf8Chars (chunk: Buffer): number {
  let n = 0
  for (let i = 0; i < chunk.length; i++) if (((chunk[i] as number) & 0xc0) !== 0x80) n++
  return n
}

export function createBodyReader (options: BodyReaderOptions): BodyReader {
  let mode: BodyMode = 'unknown'
  let bytes = 0
  let chars = 0
  const scanner = createJsonScanner(options.scan)
  const onEvent = options.onEvent ?? ((): void => {})
  const sse = createSseParser(onEvent)

  const feed = (chunk: Buffer): void => {
    if (mode === 'json') scanner.push(chunk)
    else if (mode === 'sse') sse.push(chunk)
    else if (options.rawChars === true) chars += utf8Chars(chunk)
  }

  return {
    push (chunk: Buffer): void {
      bytes += chunk.length
      if (mode === 'unknown') {
        const at = firstNonSpace(chunk)
        if (at === -1) return // leading whitespace means nothing in any of the three forms
        const c = chunk[at]
        mode = c === 0x7b || c === 0x5b ? 'json' : options.sse ? 'sse' : 'raw'
        feed(chunk.subarray(at))
        return
      }
      feed(chunk)
    },
    end (): void {
      if (mode === 'sse') sse.end()
    },
    mode: () => mode,
    bytes: () => bytes,
    rawChars: () => chars,
    scan: () => mode === 'json' ? scanner.result() : undefined
  }
}

/** The JSON values of captured raw texts; a value that does not parse is left out. */
export function parseCaptured (captured: ReadonlyMap<string, string>): Map<string, unknown> {
  const out = new Map<string, unknown>()
  for (const [key, text] of captured) {
    try {
      out.set(key, JSON.parse(text))
    } catch {
      // a truncated or malformed value is as good as absent
    }
  }
  return out
}

/** The JSON object of an event's data, or undefined (`[DONE]`, keep-alives, garbage). */
export function eventJson (data: string): Record<string, unknown> | undefined {
  let i = 0
  while (data.charCodeAt(i) === 0x20 || data.charCodeAt(i) === 0x09) i++
  if (data.charCodeAt(i) !== 0x7b) return undefined
  try {
    const v: unknown = JSON.parse(data)
    return isRecord(v) ? v : undefined
  } catch {
    return undefined
  }
}

export function isRecord (v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}
