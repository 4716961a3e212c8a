// The body is forwarded untouched except for the top-level `model` value, so it is spliced in
// place: JSON.stringify would reformat numbers (losing precision on large integers) and spacing.
import { keyName, objectLayout, skipSpace } from './json-bytes.js'

/** [start, end) byte ranges of every top-level `model` member whose value is a string. */
export function findTopLevelModelValues (buf: Buffer): Array<[number, number]> {
  const layout = objectLayout(buf, skipSpace(buf, 0))
  if (!layout) return []
  return layout.members
    .filter((m) => buf[m.valueStart] === 0x22 && keyName(m.key) === 'model')
    .map((m) => [m.valueStart, m.valueEnd])
}

/**
 * The body with every top-level `model` string replaced by `model` (all duplicates, so the
 * upstream reads the same value whichever one its parser keeps), or null when there is none.
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
