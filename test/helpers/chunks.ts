/** Splits a buffer at the given byte offsets (any order, duplicates and out-of-range ignored). */
export function cut (buf: Buffer, points: readonly number[]): Buffer[] {
  const sorted = [...new Set(points)].filter((p) => p > 0 && p < buf.length).sort((a, b) => a - b)
  const out: Buffer[] = []
  let at = 0
  for (const p of sorted) {
    out.push(buf.subarray(at, p))
    at = p
  }
  out.push(buf.subarray(at))
  return out
}
