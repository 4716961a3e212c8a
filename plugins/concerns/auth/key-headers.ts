import type { AuthHeaderConfig } from '../../foundation/config/types.js'

export type KeyExtraction =
  | { ok: true, key: string }
  | { ok: false, code: 'AUTH_API_KEY_REQUIRED' | 'AUTH_AMBIGUOUS_API_KEY' | 'AUTH_INVALID_API_KEY' }

export interface KeyHeaderRules {
  /** lower-case header name → required scheme (lower-case) or null when the whole value is the key */
  readonly byName: ReadonlyMap<string, string | null>
}

export function compileKeyHeaders (headers: readonly AuthHeaderConfig[]): KeyHeaderRules {
  return { byName: new Map(headers.map((h) => [h.name.toLowerCase(), h.scheme?.toLowerCase() ?? null])) }
}

/**
 * Reads the API key from the configured headers, looking at every occurrence (rawHeaders), so
 * a header sent twice is seen twice rather than joined by Node. The defined answers:
 * - empty or whitespace-only values count as absent; surrounding whitespace is ignored;
 * - the scheme is case-insensitive (`bearer` = `Bearer`); a value without the configured
 *   scheme (`Basic …`, a bare key in Authorization) is malformed: AUTH_INVALID_API_KEY when no
 *   other header carries a key, ignored when one does;
 * - the same key in several headers or repeated is fine; two different keys are ambiguous.
 */
export function extractKey (rawHeaders: readonly string[], rules: KeyHeaderRules): KeyExtraction {
  let found: string | undefined
  let ambiguous = false
  let malformed = false
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    const name = (rawHeaders[i] as string).toLowerCase()
    const scheme = rules.byName.get(name)
    if (scheme === undefined) continue
    let value = (rawHeaders[i + 1] as string).trim()
    if (value === '') continue
    if (scheme !== null) {
      const space = value.search(/\s/)
      if (space === -1 || value.slice(0, space).toLowerCase() !== scheme) {
        // `Bearer` alone (no token) is an empty key, anything else is a foreign scheme.
        if (value.toLowerCase() !== scheme) malformed = true
        continue
      }
      value = value.slice(space + 1).trim()
      if (value === '') continue
    }
    if (found === undefined) found = value
    else if (found !== value) ambiguous = true
  }
  if (ambiguous) return { ok: false, code: 'AUTH_AMBIGUOUS_API_KEY' }
  if (found !== undefined) return { ok: true, key: found }
  return { ok: false, code: malformed ? 'AUTH_INVALID_API_KEY' : 'AUTH_API_KEY_REQUIRED' }
}
