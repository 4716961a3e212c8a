// Byte-level edits of a JSON request body. The body is forwarded untouched except for the
// top-level `model` value, so we splice bytes instead of re-serialising: JSON.stringify
// would reformat numbers (and lose precision on large integers) and whitespace.

const QUOTE = 0x22
const BACKSLASH = 0x5c
const MODEL = Buffer.from('model')

/** Index just past the closing quote of the string that starts at `start` (a quote). */
function stringEnd (buf: Buffer, start: number): number {
  let i = start + 1
  while (i < buf.length) {
    const c = buf[i]
    if (c === BACKSLASH) { i += 2; continue }
    if (c === QUOTE) return i + 1
    i++
  }
  return -1
}

function isSpace (c: number | undefined): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09
}

/** [start, end) byte ranges of every top-level `"model": "<string>"` value. */
export function findTopLevelModelValues (buf: Buffer): Array<[number, number]> {
  const ranges: Array<[number, number]> = []
  let depth = 0
  let expectKey = false
  let i = 0
  while (i < buf.length) {
    const c = buf[i]
    if (c === QUOTE) {
      const end = stringEnd(buf, i)
      if (end === -1) return ranges
      if (depth === 1 && expectKey) {
        const isModel = end - i - 2 === MODEL.length && buf.compare(MODEL, 0, MODEL.length, i + 1, end - 1) === 0
        let j = end
        while (isSpace(buf[j])) j++
        if (buf[j] === 0x3a /* : */) {
          j++
          while (isSpace(buf[j])) j++
          if (isModel && buf[j] === QUOTE) {
            const vend = stringEnd(buf, j)
            if (vend !== -1) ranges.push([j, vend])
          }
        }
        expectKey = false
        i = end
        continue
      }
      i = end
      continue
    }
    if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
      depth++
      expectKey = c === 0x7b && depth === 1
    } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) {
      depth--
    } else if (c === 0x2c /* , */ && depth === 1) {
      expectKey = true
    }
    i++
  }
  return ranges
}

/**
 * Returns the body with every top-level `model` value replaced by `model`, or null when
 * the raw bytes hold no plain `"model"` key (an escaped key name) and the caller must
 * fall back to re-serialising.
 */
export function rewriteJsonModel (buf: Buffer, model: string): Buffer | null {
  const ranges = findTopLevelModelValues(buf)
  if (ranges.length === 0) return null
  const replacement = Buffer.from(JSON.stringify(model))
  const parts: Buffer[] = []
  let at = 0
  for (const [s, e] of ranges) {
    parts.push(buf.subarray(at, s), replacement)
    at = e
  }
  parts.push(buf.subarray(at))
  return Buffer.concat(parts)
}
