// A streaming structural scan of a JSON answer. Answers can be tens of megabytes (base64
// images), so instead of buffering and parsing them whole the scan walks the bytes once,
// jumping over string contents with indexOf, and keeps only what metering asks for: the raw
// text of a few keys of the "record" objects (the root object, or each object element of a
// root array, as in a streamed generateContent answer), a count of array items, and the
// length of generated text.
import { escapedBytes, hexValue } from './utf8.js'

export interface JsonScanOptions {
  /** Keys of record objects whose raw values are kept as text; the last occurrence wins. */
  capture?: ReadonlySet<string>
  /** Counts the object elements of these record-level arrays that hold one of `present`. */
  items?: { arrays: ReadonlySet<string>, present: ReadonlySet<string> }
  /** String values under these keys, at any depth, are counted in UTF-8 bytes (utf8.ts). */
  textKeys?: ReadonlySet<string>
  /** A captured value bigger than this is dropped (default 1 MiB). */
  maxCaptureBytes?: number
}

export interface JsonScanResult {
  /** 'other' when the body does not start like a JSON object or array. */
  root: 'empty' | 'object' | 'array' | 'other'
  captured: ReadonlyMap<string, string>
  items: number
  textBytes: number
  /** The root value was closed and nothing malformed was seen. */
  complete: boolean
}

export interface JsonScanner {
  push (chunk: Buffer): void
  result (): JsonScanResult
}

const OBJ = 0
const ARR = 1
const SKIP = 0
const KEY = 1
const TEXT = 2
const QUOTE = 0x22
const BACKSLASH = 0x5c
const MAX_DEPTH = 512
const MAX_KEY_BYTES = 64
const NONE: ReadonlySet<string> = new Set()

export function createJsonScanner (options: JsonScanOptions = {}): JsonScanner {
  const capture = options.capture ?? NONE
  const itemArrays = options.items?.arrays ?? NONE
  const itemPresent = options.items?.present ?? NONE
  const textKeys = options.textKeys ?? NONE
  const maxCapture = options.maxCaptureBytes ?? 1024 * 1024

  const stack: number[] = []
  const keys: Array<string | null> = []
  let expectKey = false
  let root: JsonScanResult['root'] = 'empty'
  let broken = false
  let closed = false

  let inString = false
  let kind = SKIP
  let escape = false
  let hex = 0
  let hexUnit = 0
  let keyParts: Buffer[] = []
  let keyLen = 0
  let keyEscaped = false

  let capKey: string | null = null
  let capDepth = 0
  let capParts: Buffer[] = []
  let capLen = 0
  let capOver = false
  const captured = new Map<string, string>()

  let itemsDepth = -1 // stack length inside the counted array
  let itemOpen = false
  let itemHas = false
  let items = 0
  let textBytes = 0

  const top = (): number | undefined => stack[stack.length - 1]
  const isRecord = (depth: number): boolean =>
    (depth === 1 && stack[0] === OBJ) || (depth === 2 && stack[0] === ARR && stack[1] === OBJ)
  const currentKey = (): string | null => keys[keys.length - 1] ?? null

  const endCapture = (piece: Buffer): void => {
    if (capKey !== null && !capOver && capLen + piece.length <= maxCapture) {
      captured.set(capKey, Buffer.concat([...capParts, piece]).toString('utf8'))
    }
    capKey = null
    capParts = []
    capLen = 0
  }

  const endKey = (piece: Buffer): void => {
    const len = keyLen + piece.length
    const key = keyEscaped || len > MAX_KEY_BYTES ? null : Buffer.concat([...keyParts, piece]).toString('utf8')
    keyParts = []
    keyLen = 0
    keys[keys.length - 1] = key
    expectKey = false
    if (itemOpen && stack.length === itemsDepth + 1 && key !== null && itemPresent.has(key)) itemHas = true
  }

  const open = (type: number): void => {
    const depth = stack.length
    if (depth === 0) {
      if (root !== 'empty') { broken = true; return }
      root = type === OBJ ? 'object' : 'array'
    }
    if (type === OBJ && depth === itemsDepth) {
      itemOpen = true
      itemHas = false
    }
    if (type === ARR && itemsDepth === -1 && isRecord(depth)) {
      const key = currentKey()
      if (key !== null && itemArrays.has(key)) itemsDepth = depth + 1
    }
    stack.push(type)
    keys.push(null)
    expectKey = type === OBJ
    if (stack.length > MAX_DEPTH) broken = true
  }

  const close = (type: number, chunk: Buffer, capFrom: number, at: number): void => {
    const depth = stack.length
    if (depth === 0 || top() !== type) { broken = true; return }
    if (capKey !== null && depth === capDepth) endCapture(chunk.subarray(capFrom, at))
    if (type === OBJ && itemOpen && depth === itemsDepth + 1) {
      if (itemHas) items++
      itemOpen = false
    }
    if (type === ARR && depth === itemsDepth) itemsDepth = -1
    stack.pop()
    keys.pop()
    expectKey = false
    if (stack.length === 0) closed = true
  }

  return {
    push (chunk: Buffer): void {
      if (broken) return
      const n = chunk.length
      let i = 0
      let capFrom = 0
      let keyFrom = 0
      let bs = -2 // next backslash at or after i; -2 = not searched yet
      while (i < n && !broken) {
        if (inString) {
          if (kind !== TEXT && !escape && hex === 0) {
            // Keys and uncounted values: jump to the next quote or backslash.
            const q = chunk.indexOf(QUOTE, i)
            if (bs !== -1 && bs < i) bs = chunk.indexOf(BACKSLASH, i)
            if (bs !== -1 && (q === -1 || bs < q)) {
              escape = true
              if (kind === KEY) keyEscaped = true
              i = bs + 1
              continue
            }
            if (q === -1) { i = n; break }
            i = q
          }
          const c = chunk[i] as number
          i++
          if (hex > 0) {
            hexUnit = hexUnit * 16 + hexValue(c)
            if (--hex === 0 && kind === TEXT) textBytes += escapedBytes(hexUnit)
            continue
          }
          if (escape) {
            escape = false
            if (c === 0x75) {
              hex = 4
              hexUnit = 0
            } else if (kind === TEXT) {
              textBytes++
            }
            continue
          }
          if (c === BACKSLASH) { escape = true; continue }
          if (c === QUOTE) {
            inString = false
            if (kind === KEY) endKey(chunk.subarray(keyFrom, i - 1))
            continue
          }
          // Bytes, not characters: a token is at least one byte of the text (utf8.ts).
          textBytes++
          continue
        }
        const c = chunk[i] as number
        switch (c) {
          case QUOTE: {
            if (stack.length === 0) {
              if (root === 'empty') root = 'other'
              broken = true
              break
            }
            inString = true
            if (top() === OBJ && expectKey) {
              kind = KEY
              keyFrom = i + 1
              keyEscaped = false
            } else {
              const key = top() === OBJ ? currentKey() : null
              kind = key !== null && textKeys.has(key) ? TEXT : SKIP
            }
            break
          }
          case 0x7b: open(OBJ); break
          case 0x5b: open(ARR); break
          case 0x7d: close(OBJ, chunk, capFrom, i); break
          case 0x5d: close(ARR, chunk, capFrom, i); break
          case 0x2c:
            if (stack.length === 0) { broken = true; break }
            if (top() === OBJ) {
              if (capKey !== null && stack.length === capDepth) endCapture(chunk.subarray(capFrom, i))
              expectKey = true
            }
            break
          case 0x3a: {
            const key = currentKey()
            if (top() === OBJ && key !== null && isRecord(stack.length) && capture.has(key)) {
              capKey = key
              capDepth = stack.length
              capParts = []
              capLen = 0
              capOver = false
              capFrom = i + 1
            }
            break
          }
          case 0x20: case 0x0a: case 0x0d: case 0x09: break
          default:
            // Numbers and literals; outside any container they mean this is not a JSON document.
            if (stack.length === 0) {
              if (root === 'empty') root = 'other'
              broken = true
            }
        }
        i++
      }
      if (broken) return
      if (capKey !== null && !capOver) {
        const piece = chunk.subarray(capFrom, n)
        capLen += piece.length
        if (capLen > maxCapture) { capOver = true; capParts = [] } else capParts.push(piece)
      }
      if (inString && kind === KEY) {
        const piece = chunk.subarray(keyFrom, n)
        keyLen += piece.length
        if (keyLen <= MAX_KEY_BYTES) keyParts.push(piece)
      }
    },
    result (): JsonScanResult {
      return { root, captured, items, textBytes, complete: closed && !broken && !inString }
    }
  }
}
