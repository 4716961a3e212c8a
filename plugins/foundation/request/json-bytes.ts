// Reading the structure of a complete JSON text in place, as byte offsets, so that an edit can
// splice a few bytes and leave every other byte (numbers, whitespace, escapes) as it was.

const QUOTE = 0x22
const BACKSLASH = 0x5c

export function isJsonSpace (c: number | undefined): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09
}

export function skipSpace (buf: Buffer, i: number): number {
  while (i < buf.length && isJsonSpace(buf[i])) i++
  return i
}

/** Index just past the string that opens at `start` (a quote), or -1. */
export function stringEnd (buf: Buffer, start: number): number {
  let i = start + 1
  for (;;) {
    const q = buf.indexOf(QUOTE, i)
    if (q === -1) return -1
    let slashes = 0
    while (buf[q - 1 - slashes] === BACKSLASH) slashes++
    if (slashes % 2 === 0) return q + 1
    i = q + 1
  }
}

/** Index just past the value that starts at `start`, or -1 when it is malformed. */
export function valueEnd (buf: Buffer, start: number): number {
  const c = buf[start]
  if (c === undefined) return -1
  if (c === QUOTE) return stringEnd(buf, start)
  if (c === 0x7b || c === 0x5b) {
    let depth = 0
    let i = start
    while (i < buf.length) {
      const b = buf[i]
      if (b === QUOTE) {
        i = stringEnd(buf, i)
        if (i === -1) return -1
        continue
      }
      if (b === 0x7b || b === 0x5b) depth++
      else if (b === 0x7d || b === 0x5d) {
        depth--
        if (depth === 0) return i + 1
      }
      i++
    }
    return -1
  }
  let i = start
  while (i < buf.length) {
    const b = buf[i]
    if (b === 0x2c || b === 0x7d || b === 0x5d || isJsonSpace(b)) break
    i++
  }
  return i === start ? -1 : i
}

export interface Member {
  /** Index of the key's opening quote: where the member starts. */
  keyStart: number
  /** The key's bytes between its quotes. */
  key: Buffer
  valueStart: number
  valueEnd: number
}

export interface ObjectLayout {
  members: Member[]
  /** Index of the closing brace. */
  close: number
}

/** The members of the object whose `{` is at `open`, in order, or null when malformed. */
export function objectLayout (buf: Buffer, open: number): ObjectLayout | null {
  if (buf[open] !== 0x7b) return null
  const members: Member[] = []
  let i = skipSpace(buf, open + 1)
  if (buf[i] === 0x7d) return { members, close: i }
  for (;;) {
    if (buf[i] !== QUOTE) return null
    const keyStart = i
    const keyEnd = stringEnd(buf, i)
    if (keyEnd === -1) return null
    const key = buf.subarray(i + 1, keyEnd - 1)
    i = skipSpace(buf, keyEnd)
    if (buf[i] !== 0x3a) return null
    const valueStart = skipSpace(buf, i + 1)
    const end = valueEnd(buf, valueStart)
    if (end === -1) return null
    members.push({ keyStart, key, valueStart, valueEnd: end })
    i = skipSpace(buf, end)
    if (buf[i] === 0x7d) return { members, close: i }
    if (buf[i] !== 0x2c) return null
    i = skipSpace(buf, i + 1)
  }
}

/** A member's key as JSON.parse reads it (escapes decoded), or null when it is malformed. */
export function keyName (key: Buffer): string | null {
  if (!key.includes(BACKSLASH)) return key.toString('utf8')
  try {
    const name: unknown = JSON.parse(`"${key.toString('utf8')}"`)
    return typeof name === 'string' ? name : null
  } catch {
    return null
  }
}

/** The last member named `name` (JSON.parse keeps the last of duplicate keys). */
export function lastMember (layout: ObjectLayout, name: string): Member | undefined {
  for (let i = layout.members.length - 1; i >= 0; i--) {
    const m = layout.members[i]
    if (m && keyName(m.key) === name) return m
  }
  return undefined
}

export function splice (buf: Buffer, start: number, end: number, insert: string): Buffer {
  return Buffer.concat([buf.subarray(0, start), Buffer.from(insert), buf.subarray(end)])
}
