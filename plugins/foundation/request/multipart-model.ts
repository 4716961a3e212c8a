// Rewrites the `model` field of a multipart body to the upstream model name, in place, keeping
// every other byte. The part rewritten must be the very part the gateway read the model from
// (busboy, multipart.ts): otherwise a client could be priced for one model while the provider
// reads another. So the parts are split on the boundary and each part's Content-Disposition is
// parsed as RFC 7578 / RFC 6266 parameters (tokens and quoted strings with escapes), never
// searched as text: `name=model` (unquoted) names the model part, and `name="model"` inside
// another parameter's quoted value (`filename="x name=\"model\""`) does not.
import { gatewayError } from '../errors/index.js'

export interface PartHeaders {
  /** Content-Disposition type, lower-case (`form-data`), or null without the header. */
  disposition: string | null
  /** Its parameters, names lower-case; `name*`/`filename*` decoded into `name`/`filename`. */
  params: Map<string, string>
  /** Content-Type of the part, lower-case, without parameters; null without the header. */
  contentType: string | null
}

export interface Part {
  headers: PartHeaders
  /** Byte range of the part's content in the body. */
  contentStart: number
  contentEnd: number
}

const CRLF = Buffer.from('\r\n')
const HEADERS_END = Buffer.from('\r\n\r\n')

/**
 * The parts of a multipart body, in order, as RFC 2046 delimits them: the first delimiter may
 * open the body or follow a preamble line; each later one is CRLF `--boundary`. Null when the
 * body is not well-formed (no closing delimiter, a part without a header block).
 */
export function splitParts (raw: Buffer, boundary: string): Part[] | null {
  const dash = Buffer.from(`--${boundary}`)
  const delimiter = Buffer.from(`\r\n--${boundary}`)
  let at: number
  if (raw.subarray(0, dash.length).equals(dash)) {
    at = dash.length
  } else {
    const found = raw.indexOf(delimiter)
    if (found === -1) return null
    at = found + delimiter.length
  }
  const parts: Part[] = []
  for (let guard = 0; guard <= raw.length; guard++) {
    // After a delimiter: `--` closes the body; else optional whitespace, then CRLF.
    if (raw[at] === 0x2d && raw[at + 1] === 0x2d) return parts
    const lineEnd = raw.indexOf(CRLF, at)
    if (lineEnd === -1) return null
    if (!/^[ \t]*$/.test(raw.toString('latin1', at, lineEnd))) return null
    const headersStart = lineEnd + 2
    let headersEnd: number
    let contentStart: number
    if (raw[headersStart] === 0x0d && raw[headersStart + 1] === 0x0a) {
      // A part without any header line.
      headersEnd = headersStart
      contentStart = headersStart + 2
    } else {
      headersEnd = raw.indexOf(HEADERS_END, headersStart)
      if (headersEnd === -1) return null
      contentStart = headersEnd + 4
    }
    const next = raw.indexOf(delimiter, contentStart)
    if (next === -1) return null
    parts.push({ headers: parsePartHeaders(raw.toString('utf8', headersStart, headersEnd)), contentStart, contentEnd: next })
    at = next + delimiter.length
  }
  return null
}

export function parsePartHeaders (block: string): PartHeaders {
  const out: PartHeaders = { disposition: null, params: new Map(), contentType: null }
  // Obsolete line folding: a line starting with whitespace continues the previous one.
  for (const line of block.replace(/\r\n[ \t]+/g, ' ').split('\r\n')) {
    const colon = line.indexOf(':')
    if (colon === -1) continue
    const name = line.slice(0, colon).trim().toLowerCase()
    const value = line.slice(colon + 1)
    if (name === 'content-disposition' && out.disposition === null) {
      const parsed = parseParameters(value)
      out.disposition = parsed.type
      out.params = parsed.params
    } else if (name === 'content-type' && out.contentType === null) {
      out.contentType = parseParameters(value).type
    }
  }
  return out
}

/** `type; a=token; b="quoted \"string\""; c*=utf-8''%C3%A9` → type and parameters. */
export function parseParameters (value: string): { type: string, params: Map<string, string> } {
  const params = new Map<string, string>()
  let i = 0
  const n = value.length
  const skipSpace = (): void => { while (i < n && (value[i] === ' ' || value[i] === '\t')) i++ }
  skipSpace()
  let type = ''
  while (i < n && value[i] !== ';') type += value[i++]
  const extended = new Map<string, string>()
  while (i < n) {
    i++ // the ';'
    skipSpace()
    let name = ''
    while (i < n && value[i] !== '=' && value[i] !== ';') name += value[i++]
    name = name.trim().toLowerCase()
    if (value[i] !== '=') continue
    i++
    skipSpace()
    let v = ''
    if (value[i] === '"') {
      i++
      while (i < n && value[i] !== '"') {
        if (value[i] === '\\' && i + 1 < n) i++
        v += value[i++]
      }
      i++ // the closing quote
      while (i < n && value[i] !== ';') i++ // anything after the quote up to the next ';' is junk
    } else {
      while (i < n && value[i] !== ';') v += value[i++]
      v = v.trim()
    }
    if (name === '') continue
    if (name.endsWith('*')) {
      const decoded = decodeExtValue(v)
      if (decoded !== null) extended.set(name.slice(0, -1), decoded)
    } else if (!params.has(name)) {
      params.set(name, v)
    }
  }
  // RFC 6266 §4.3: the extended form wins over the plain one.
  for (const [name, v] of extended) params.set(name, v)
  return { type: type.trim().toLowerCase(), params }
}

/** RFC 8187 `charset'lang'pct-encoded`; null when malformed. */
function decodeExtValue (v: string): string | null {
  const m = /^([^']*)'[^']*'(.*)$/.exec(v)
  if (m === null) return null
  try {
    return decodeURIComponent(m[2] ?? '')
  } catch {
    return null
  }
}

/** Busboy's rule (multipart.ts reads with it): a part with a filename or an octet-stream type is a file. */
function isFilePart (h: PartHeaders): boolean {
  return h.params.has('filename') || h.contentType === 'application/octet-stream'
}

/** Whatever the disposition type: a provider's parser may be laxer than busboy about it. */
function namesField (h: PartHeaders, field: string): boolean {
  return h.params.get('name') === field
}

/**
 * The one part the gateway read `field` from, or null when no part carries `field`. Refuses
 * (REQUEST_INVALID) a body in which more than one part is named `field`, or whose only such part
 * is not the one the gateway read `readValue` from: either way the provider could read a model
 * other than the one priced. Run when the body is parsed, so such a body is refused before
 * anything is held; the rewrite runs it again on the bytes it edits.
 */
export function findModelPart (raw: Buffer, boundary: string, readValue: string | undefined, field = 'model'): Part | null {
  const parts = splitParts(raw, boundary)
  if (parts === null) throw gatewayError('REQUEST_INVALID', { param: field, detail: 'The multipart body is malformed.' })
  const named = parts.filter((p) => namesField(p.headers, field))
  if (named.length === 0) {
    if (readValue !== undefined) throw gatewayError('REQUEST_INVALID', { param: field, detail: `The ${field} field could not be located.` })
    return null
  }
  if (named.length > 1) throw gatewayError('REQUEST_INVALID', { param: field, detail: `The multipart body has more than one ${field} field.` })
  const part = named[0] as Part
  const content = raw.toString('utf8', part.contentStart, part.contentEnd)
  if (part.headers.disposition !== 'form-data' || isFilePart(part.headers) || readValue === undefined || content !== readValue) {
    throw gatewayError('REQUEST_INVALID', { param: field, detail: `The ${field} field must be a plain form field.` })
  }
  return part
}

/** The body with the part findModelPart finds now carrying `value`; null without such a part. */
export function rewriteMultipartModel (raw: Buffer, boundary: string, readValue: string | undefined, value: string, field = 'model'): Buffer | null {
  const part = findModelPart(raw, boundary, readValue, field)
  if (part === null) return null
  return Buffer.concat([raw.subarray(0, part.contentStart), Buffer.from(value), raw.subarray(part.contentEnd)])
}
