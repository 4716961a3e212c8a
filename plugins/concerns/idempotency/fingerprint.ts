import { createHash } from 'node:crypto'
import type { ParsedBody } from '../../foundation/shapes/index.js'

/** Nesting past this depth is hashed as raw bytes instead (the canonical form recurses). */
const MAX_DEPTH = 512

class NotCanonical extends Error {}

/**
 * The canonical form of a JSON text: no insignificant whitespace, object members sorted by key
 * (UTF-16 order; a repeated key keeps its last value, as JSON.parse does), strings re-encoded
 * from their decoded value (so `"\u0041"` equals `"A"`). Numbers keep their exact lexeme, so
 * two bodies that differ only past 2^53 (which JSON.parse would merge) stay different; `1.0`
 * and `1` are then different requests too, which errs on the side of a conflict.
 * Throws NotCanonical on nesting deeper than MAX_DEPTH or text that is not JSON.
 */
export function canonicalJson (text: string): string {
  let i = 0
  const fail = (): never => { throw new NotCanonical() }
  const space = (): void => {
    while (i < text.length) {
      const c = text.charCodeAt(i)
      if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) return
      i++
    }
  }
  const expect = (ch: string): void => {
    space()
    if (text[i] !== ch) fail()
    i++
  }
  const string = (): string => {
    space()
    if (text[i] !== '"') fail()
    const start = i++
    while (i < text.length && text[i] !== '"') i += text[i] === '\\' ? 2 : 1
    if (i >= text.length) fail()
    i++
    return JSON.parse(text.slice(start, i)) as string
  }
  const value = (depth: number): string => {
    if (depth > MAX_DEPTH) fail()
    space()
    const c = text[i]
    if (c === '{') {
      i++
      const members = new Map<string, string>()
      space()
      if (text[i] === '}') { i++; return '{}' }
      for (;;) {
        const key = string()
        expect(':')
        const v = value(depth + 1)
        members.delete(key) // the last occurrence wins
        members.set(key, v)
        space()
        if (text[i] === ',') { i++; continue }
        expect('}')
        break
      }
      const keys = [...members.keys()].sort()
      return `{${keys.map((k) => `${JSON.stringify(k)}:${members.get(k) as string}`).join(',')}}`
    }
    if (c === '[') {
      i++
      const items: string[] = []
      space()
      if (text[i] === ']') { i++; return '[]' }
      for (;;) {
        items.push(value(depth + 1))
        space()
        if (text[i] === ',') { i++; continue }
        expect(']')
        break
      }
      return `[${items.join(',')}]`
    }
    if (c === '"') return JSON.stringify(string())
    // A number or a literal: its lexeme up to the next delimiter.
    const start = i
    while (i < text.length && !' \t\r\n,]}'.includes(text[i] as string)) i++
    if (i === start) fail()
    return text.slice(start, i)
  }
  const out = value(0)
  space()
  if (i !== text.length) fail()
  return out
}

function sha256 (): ReturnType<typeof createHash> {
  return createHash('sha256')
}

/**
 * Digest of the raw multipart bytes with the boundary taken out: a client's retry builds its
 * form again and a new random boundary with it, yet it is the same request.
 */
function multipartDigest (raw: Buffer, boundary: string): string {
  const h = sha256()
  if (boundary === '') return h.update(raw).digest('hex')
  const delimiter = Buffer.from(`--${boundary}`, 'latin1')
  let at = 0
  // Bounded: every turn moves past one delimiter.
  for (let found = raw.indexOf(delimiter, at); found !== -1; found = raw.indexOf(delimiter, at)) {
    h.update(raw.subarray(at, found)).update('\0--\0')
    at = found + delimiter.length
  }
  return h.update(raw.subarray(at)).digest('hex')
}

/** Digest of what a body asks: canonical JSON, boundary-free multipart bytes, or no body. */
export function bodyDigest (body: ParsedBody | undefined): string {
  if (body === undefined) return 'none'
  if (body.kind === 'multipart') return `multipart:${multipartDigest(body.raw, body.summary.boundary)}`
  let canonical: string
  try {
    canonical = canonicalJson(body.raw.toString('utf8'))
  } catch {
    // Too deep to canonicalise (or not JSON after all): the exact bytes are compared instead.
    return `raw:${sha256().update(body.raw).digest('hex')}`
  }
  return `json:${sha256().update(canonical).digest('hex')}`
}

export interface FingerprintInput {
  /** The route declaration (`METHOD path`; aliases share it). */
  routeId: string
  /** The model the client asked for (body field or path segment). */
  model: string | null
  body: ParsedBody | undefined
}

/** What the same idempotency key must ask again to be the same request: route, model and body. */
export function fingerprintOf (input: FingerprintInput): string {
  return sha256()
    .update(input.routeId).update('\n')
    .update(input.model ?? '').update('\n')
    .update(bodyDigest(input.body))
    .digest('hex')
}
