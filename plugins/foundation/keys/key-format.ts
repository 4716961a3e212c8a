// API key material: shape, checksum and display prefix. Pure functions, no I/O.
//
// New keys are `sk-` + 43 base62 chars (32 random bytes) + a 6-char base62 CRC32 of
// everything before it. The checksum lets secret scanners and our own auth reject a
// mistyped or truncated key offline, before any database or HMAC work.
import { randomBytes as nodeRandomBytes } from 'node:crypto'
import { crc32 } from 'node:zlib'

/** Injected randomness so tests can replay a seed. */
export type RandomBytes = (size: number) => Uint8Array

export type KeyKind = 'sk' | 'legacy'

export const KEY_PREFIX = 'sk-'
export const LEGACY_KEY_PREFIX = 'gw_live_'
export const KEY_SECRET_BYTES = 32
const BODY_LENGTH = 43
const CHECKSUM_LENGTH = 6
export const KEY_LENGTH = KEY_PREFIX.length + BODY_LENGTH + CHECKSUM_LENGTH
/** How many leading characters are kept in clear for display. */
export const DISPLAY_PREFIX_LENGTH = 8

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'
const SK_PATTERN = new RegExp(`^${KEY_PREFIX}[0-9A-Za-z]{${BODY_LENGTH + CHECKSUM_LENGTH}}$`)
// Legacy keys predate our format and we never saw all of them; accept any visible
// ASCII so no valid legacy key is rejected before its hash is looked up.
const LEGACY_PATTERN = /^gw_live_[\x21-\x7e]{1,256}$/

export function toBase62 (value: bigint, width: number): string {
  let out = ''
  let rest = value
  while (rest > 0n) {
    out = ALPHABET.charAt(Number(rest % 62n)) + out
    rest /= 62n
  }
  if (out.length > width) throw new RangeError(`value does not fit in ${width} base62 chars`)
  return out.padStart(width, '0')
}

function bytesToBigInt (bytes: Uint8Array): bigint {
  let value = 0n
  for (const byte of bytes) value = (value << 8n) | BigInt(byte)
  return value
}

/**
 * The CRC32 of `head` in 6 base62 digits: toBase62's digits, in Number arithmetic (a CRC32 is
 * below 2^32, exact in a double), as auth checks it on every request.
 */
function checksumOf (head: string): string {
  let rest = crc32(head)
  let out = ''
  for (let i = 0; i < CHECKSUM_LENGTH; i++) {
    out = ALPHABET.charAt(rest % 62) + out
    rest = Math.floor(rest / 62)
  }
  return out
}

export function generateKey (random: RandomBytes = nodeRandomBytes): string {
  const bytes = random(KEY_SECRET_BYTES)
  if (bytes.length !== KEY_SECRET_BYTES) {
    throw new RangeError(`random source returned ${bytes.length} bytes, expected ${KEY_SECRET_BYTES}`)
  }
  const head = KEY_PREFIX + toBase62(bytesToBigInt(bytes), BODY_LENGTH)
  return head + checksumOf(head)
}

/** Which kind of key this string is, or null when it cannot be one of ours. */
export function keyKind (key: string): KeyKind | null {
  if (SK_PATTERN.test(key)) {
    const cut = key.length - CHECKSUM_LENGTH
    return checksumOf(key.slice(0, cut)) === key.slice(cut) ? 'sk' : null
  }
  return LEGACY_PATTERN.test(key) ? 'legacy' : null
}

/** True for a well-formed `sk-` key with a matching checksum, or a legacy `gw_live_` key. */
export function hasValidChecksum (key: string): boolean {
  return keyKind(key) !== null
}

export function isLegacyKey (key: string): boolean {
  return LEGACY_PATTERN.test(key)
}

export function displayPrefix (key: string): string {
  return key.slice(0, DISPLAY_PREFIX_LENGTH)
}
