// The console's secrets: password hashes (scrypt, memory-hard, a salt per user), random
// session tokens and verification codes, the per-session CSRF token, and the self-hosted
// proof-of-work human check. Everything compared here is compared in constant time.
import { createHash, randomBytes, randomInt, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto'

/** scrypt's cost parameters for new hashes (console.password_scrypt_n, _r, _p). */
export interface ScryptCost { readonly n: number, readonly r: number, readonly p: number }

/**
 * The default cost: N = 2^15, r = 8 (32 MiB of memory per hash), p = 3: one of OWASP's
 * equivalent minimum settings (2^17/8/1, 2^16/8/2, 2^15/8/3, ...).
 */
export const DEFAULT_SCRYPT_COST: ScryptCost = { n: 32768, r: 8, p: 3 }
const KEY_LENGTH = 32
const SALT_BYTES = 16
/** Node's options for a cost: scrypt needs 128·N·r bytes; twice that leaves room, as Node's own default does not. */
function scryptOptions ({ n, r, p }: ScryptCost): ScryptOptions {
  return { N: n, r, p, maxmem: 128 * n * r * 2 }
}

function scryptAsync (password: string, salt: Buffer, keylen: number, opts: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scrypt(password.normalize('NFC'), salt, keylen, opts, (err, key) => { if (err) reject(err); else resolve(key) })
  })
}

/** `scrypt$N$r$p$<salt base64url>$<hash base64url>`: the parameters travel with the hash, so they can be raised later. */
export async function hashPassword (password: string, cost: ScryptCost = DEFAULT_SCRYPT_COST): Promise<string> {
  const salt = randomBytes(SALT_BYTES)
  const key = await scryptAsync(password, salt, KEY_LENGTH, scryptOptions(cost))
  return `scrypt$${cost.n}$${cost.r}$${cost.p}$${salt.toString('base64url')}$${key.toString('base64url')}`
}

/** True when `password` matches `stored`; a malformed stored hash never matches (and still costs one hash). */
export async function verifyPassword (password: string, stored: string): Promise<boolean> {
  const parts = stored.split('$')
  const [kind, n, r, p, salt, hash] = parts
  const ok = parts.length === 6 && kind === 'scrypt' && salt !== undefined && hash !== undefined
  const N = Number(n)
  const R = Number(r)
  const P = Number(p)
  const expected = ok ? Buffer.from(hash, 'base64url') : Buffer.alloc(KEY_LENGTH)
  const params = ok && Number.isInteger(N) && Number.isInteger(R) && Number.isInteger(P) && expected.length > 0
    ? scryptOptions({ n: N, r: R, p: P })
    : scryptOptions(DEFAULT_SCRYPT_COST)
  const key = await scryptAsync(password, ok ? Buffer.from(salt, 'base64url') : Buffer.alloc(SALT_BYTES), expected.length || KEY_LENGTH, params)
  return ok && key.length === expected.length && timingSafeEqual(key, expected)
}

/** A 256-bit random token, base64url: the session cookie's value. */
export function newToken (): string {
  return randomBytes(32).toString('base64url')
}

/** Six decimal digits, uniform. */
export function newVerificationCode (): string {
  return String(randomInt(0, 1_000_000)).padStart(6, '0')
}

export function sha256Hex (text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex')
}

/** Constant-time equality of two strings of any length (their digests are compared). */
export function safeEqualText (a: string, b: string): boolean {
  return timingSafeEqual(createHash('sha256').update(a).digest(), createHash('sha256').update(b).digest())
}

// ---- proof of work ------------------------------------------------------------------------

/** Leading zero bits of a digest. */
export function leadingZeroBits (digest: Buffer): number {
  let bits = 0
  for (const byte of digest) {
    if (byte === 0) { bits += 8; continue }
    return bits + Math.clz32(byte) - 24
  }
  return bits
}

export interface Challenge {
  /** Opaque, signed: `<difficulty>.<expires ms>.<nonce>.<mac>`. */
  challenge: string
  difficulty: number
  expires_at: string
}

export type PowCheck = 'ok' | 'failed'

/**
 * Stateless challenges signed with the server secret (the `mac` function). A solved one is
 * claimed through `firstUse` (the console's shared throttle store), so one solution buys one
 * attempt on every instance.
 */
export class ProofOfWork {
  constructor (
    private readonly mac: (text: string) => string,
    private readonly ttlMs: number,
    /** True the first time a challenge is claimed, false after. */
    private readonly firstUse: (challenge: string) => Promise<boolean>
  ) {}

  issue (difficulty: number, now: number): Challenge {
    const expires = now + this.ttlMs
    const body = `${difficulty}.${expires}.${randomBytes(16).toString('base64url')}`
    return { challenge: `${body}.${this.mac(`pow:${body}`)}`, difficulty, expires_at: new Date(expires).toISOString() }
  }

  /** A solution is valid when sha256(`<challenge>:<solution>`) starts with `difficulty` zero bits. */
  async check (challenge: string, solution: string, minDifficulty: number, now: number): Promise<PowCheck> {
    const parts = challenge.split('.')
    if (parts.length !== 4 || solution.length === 0 || solution.length > 64) return 'failed'
    const [d, e, nonce, mac] = parts as [string, string, string, string]
    if (!safeEqualText(mac, this.mac(`pow:${d}.${e}.${nonce}`))) return 'failed'
    const difficulty = Number(d)
    const expires = Number(e)
    if (!Number.isInteger(difficulty) || difficulty < minDifficulty || !(expires > now)) return 'failed'
    const digest = createHash('sha256').update(`${challenge}:${solution}`).digest()
    if (leadingZeroBits(digest) < difficulty) return 'failed'
    return await this.firstUse(challenge) ? 'ok' : 'failed'
  }
}

/** What a client does (tests and the page's script do the same in their language). */
export function solveChallenge (challenge: string, difficulty: number): string {
  for (let i = 0; ; i++) {
    const s = i.toString(36)
    if (leadingZeroBits(createHash('sha256').update(`${challenge}:${s}`).digest()) >= difficulty) return s
  }
}
