/** The request header a client names its retry-safe request with (`auth.strip_headers` keeps it from providers). */
export const IDEMPOTENCY_HEADER = 'x-idempotency-key'
export const MAX_KEY_LENGTH = 255

/** Printable ASCII, no leading or trailing space (HTTP trims those anyway, so they could never match). */
const PRINTABLE = /^[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?$/

export type KeyRead =
  | { kind: 'absent' }
  | { kind: 'key', key: string }
  | { kind: 'invalid', detail: string }

/**
 * The request's idempotency key, read from the raw header list so that a repeated header is
 * seen as such (Node would join the values with ", " into a key the client never chose).
 */
export function readIdempotencyKey (rawHeaders: readonly string[]): KeyRead {
  let value: string | undefined
  let seen = 0
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    const name = rawHeaders[i] as string
    if (name.length !== IDEMPOTENCY_HEADER.length || name.toLowerCase() !== IDEMPOTENCY_HEADER) continue
    seen++
    value = rawHeaders[i + 1]
  }
  if (seen === 0 || value === undefined) return { kind: 'absent' }
  if (seen > 1) return { kind: 'invalid', detail: 'Send one X-Idempotency-Key header.' }
  if (value.length === 0 || value.length > MAX_KEY_LENGTH || !PRINTABLE.test(value)) {
    return { kind: 'invalid', detail: `X-Idempotency-Key must be 1 to ${MAX_KEY_LENGTH} printable ASCII characters.` }
  }
  return { kind: 'key', key: value }
}
