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

/**
 * Calls `visit` with every string under a text key of `json`, at any depth (an array under a
 * text key is text too; walked without recursion, at most MAX_NODES nodes), then with every
 * multipart field under a text key. `visit` answering true ends the walk.
 */
export function visitRequestText (json: unknown, fields: Readonly<Record<string, string>> | undefined, visit: (text: string) => boolean | undefined): void {
  if (json !== undefined) {
    const values: unknown[] = [json]
    const texts: boolean[] = [false]
    let visited = 0
    while (values.length > 0 && visited < MAX_NODES) {
      const v = values.pop()
      const text = texts.pop() as boolean
      visited++
      if (typeof v === 'string') {
        if (text && visit(v) === true) return
      } else if (Array.isArray(v)) {
        for (const item of v) { values.push(item); texts.push(text) }
      } else if (isRecord(v)) {
        for (const key of Object.keys(v)) { values.push(v[key]); texts.push(TEXT_KEYS.has(key)) }
      }
    }
  }
  if (fields === undefined) return
  for (const key of Object.keys(fields)) {
    const value = fields[key]
    if (TEXT_KEYS.has(key) && typeof value === 'string' && visit(value) === true) return
  }
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
  visitRequestText(facts.json, facts.multipartFields, (text) => { n += codePoints(text); return undefined })
  return n
}
