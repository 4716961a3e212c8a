// How much text a request sends, for estimating its input tokens when the upstream reports
// none. Only strings under text-bearing keys count: base64 images and audio (`url`, `data`,
// `inline_data`) would otherwise inflate the estimate a thousandfold.

import { isRecord } from './body-reader.js'

/** Keys whose string values are prompt text in the three families' request formats. */
const TEXT_KEYS: ReadonlySet<string> = new Set([
  'content', 'text', 'input', 'prompt', 'instructions', 'system', 'lyrics', 'negativePrompt', 'negative_prompt'
])

/** Nodes visited at most: a hostile body cannot make the estimate expensive. */
const MAX_NODES = 1_000_000

/** Unicode code points of a string (a surrogate pair is one character). */
export function codePoints (s: string): number {
  let n = s.length
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    if (c >= 0xd800 && c <= 0xdbff) {
      const d = s.charCodeAt(i + 1)
      if (d >= 0xdc00 && d <= 0xdfff) { n--; i++ }
    }
  }
  return n
}

/** Code points of every string under a text key, at any depth (walked without recursion). */
export function textChars (value: unknown): number {
  let total = 0
  let visited = 0
  const pending: Array<{ v: unknown, text: boolean }> = [{ v: value, text: false }]
  while (pending.length > 0 && visited < MAX_NODES) {
    const { v, text } = pending.pop() as { v: unknown, text: boolean }
    visited++
    if (typeof v === 'string') {
      if (text) total += codePoints(v)
    } else if (Array.isArray(v)) {
      // ["a", "b"] under a text key is text too.
      for (const item of v) pending.push({ v: item, text })
    } else if (isRecord(v)) {
      for (const key of Object.keys(v)) pending.push({ v: v[key], text: TEXT_KEYS.has(key) })
    }
  }
  return total
}

export interface RequestTextFacts {
  json?: Record<string, unknown>
  multipartFields?: Record<string, string>
  inputChars?: number
}

/** Characters of prompt text in the request: the gateway's own count when given, else walked. */
export function requestChars (facts: RequestTextFacts): number {
  const given = facts.inputChars
  if (typeof given === 'number' && Number.isFinite(given) && given >= 0) return given
  let n = 0
  if (facts.json) n += textChars(facts.json)
  const fields = facts.multipartFields
  if (fields) {
    for (const key of Object.keys(fields)) {
      const value = fields[key]
      if (TEXT_KEYS.has(key) && typeof value === 'string') n += codePoints(value)
    }
  }
  return n
}
