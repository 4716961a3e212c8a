// Key lookup and sealing under the server secret.
//
// Two independent keys are derived from the one server secret with HKDF, so the
// lookup HMAC key and the encryption key never coincide: leaking lookup hashes says
// nothing about the sealing key and vice versa.
import {
  createCipheriv,
  createDecipheriv,
  createHmac,
  hkdfSync,
  randomBytes as nodeRandomBytes,
  timingSafeEqual,
} from 'node:crypto'
import type { RandomBytes } from './key-format.js'

export const MIN_SECRET_LENGTH = 32
const HKDF_SALT = 'model-gateway/v1'
const LOOKUP_INFO = 'model-gateway/api-key-lookup/v1'
const SEAL_INFO = 'model-gateway/api-key-seal/v1'
const SEAL_VERSION = 'v1'
const IV_BYTES = 12
const TAG_BYTES = 16
const HEX = /^(?:[0-9a-f]{2})*$/i

export class KeySealError extends Error {
  override readonly name = 'KeySealError'
}

interface DerivedKeys {
  lookup: Buffer
  seal: Buffer
}

// One server secret per process in practice; remembering the last derivation keeps
// HKDF off the per-request path without holding a map of secrets.
let lastDerived: { secret: string; keys: DerivedKeys } | undefined

function derive (secret: string): DerivedKeys {
  if (lastDerived?.secret === secret) return lastDerived.keys
  if (secret.length < MIN_SECRET_LENGTH) {
    throw new RangeError(`server secret must be at least ${MIN_SECRET_LENGTH} characters`)
  }
  const expand = (info: string): Buffer =>
    Buffer.from(hkdfSync('sha256', secret, HKDF_SALT, info, 32))
  const keys = { lookup: expand(LOOKUP_INFO), seal: expand(SEAL_INFO) }
  lastDerived = { secret, keys }
  return keys
}

/** HMAC-SHA256 (hex) of a plaintext key; the only form in which keys are looked up. */
export function lookupHash (secret: string, key: string): string {
  return createHmac('sha256', derive(secret).lookup).update(key, 'utf8').digest('hex')
}

/** Constant-time comparison of two hex digests; false for malformed or unequal lengths. */
export function safeEqualHex (a: string, b: string): boolean {
  if (a.length !== b.length || !HEX.test(a) || !HEX.test(b)) return false
  return timingSafeEqual(Buffer.from(a, 'hex'), Buffer.from(b, 'hex'))
}

/**
 * AES-256-GCM with a random IV; the key row id is the associated data, so a sealed
 * value copied onto another row does not open there.
 */
export function sealKey (
  secret: string,
  keyId: string,
  plaintext: string,
  random: RandomBytes = nodeRandomBytes
): string {
  const iv = Buffer.from(random(IV_BYTES))
  if (iv.length !== IV_BYTES) throw new RangeError(`IV must be ${IV_BYTES} bytes`)
  const cipher = createCipheriv('aes-256-gcm', derive(secret).seal, iv)
  cipher.setAAD(Buffer.from(keyId, 'utf8'))
  const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()])
  const sealed = Buffer.concat([iv, body, cipher.getAuthTag()])
  return `${SEAL_VERSION}.${sealed.toString('base64url')}`
}

/** Throws KeySealError when the value was tampered with, moved to another row or sealed under another secret. */
export function openKey (secret: string, keyId: string, sealed: string): string {
  const dot = sealed.indexOf('.')
  if (dot < 0 || sealed.slice(0, dot) !== SEAL_VERSION) {
    throw new KeySealError('sealed key has an unknown format')
  }
  const raw = Buffer.from(sealed.slice(dot + 1), 'base64url')
  if (raw.length < IV_BYTES + TAG_BYTES) throw new KeySealError('sealed key is truncated')
  const iv = raw.subarray(0, IV_BYTES)
  const tag = raw.subarray(raw.length - TAG_BYTES)
  const body = raw.subarray(IV_BYTES, raw.length - TAG_BYTES)
  try {
    const decipher = createDecipheriv('aes-256-gcm', derive(secret).seal, iv)
    decipher.setAAD(Buffer.from(keyId, 'utf8'))
    decipher.setAuthTag(tag)
    return Buffer.concat([decipher.update(body), decipher.final()]).toString('utf8')
  } catch (cause) {
    throw new KeySealError('sealed key failed authentication', { cause })
  }
}
