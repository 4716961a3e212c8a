// Time and id sources are injected so tests can move time and replay ids.
import { randomFillSync } from 'node:crypto'

export interface Clock {
  now(): Date
}

export const systemClock: Clock = { now: () => new Date() }

/** Returns a new id with the given prefix, e.g. `acct` → `acct_…`. */
export type IdSource = (prefix: string) => string

const ID_CHARS = 22
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'
// Ids are minted on the hot path (a hold per request): one system call fills a pool that
// serves many ids, instead of one call per id.
const pool = Buffer.alloc(4096)
let poolAt = pool.length

function randomByte (): number {
  if (poolAt === pool.length) {
    randomFillSync(pool)
    poolAt = 0
  }
  return pool[poolAt++] as number
}

/**
 * `<prefix>_` + 22 base62 characters (≈ 131 random bits). Bytes ≥ 248 are rejected so every
 * character is uniform over the 62.
 */
export const randomIds: IdSource = (prefix) => {
  let out = ''
  while (out.length < ID_CHARS) {
    const b = randomByte()
    if (b < 248) out += BASE62.charAt(b % 62)
  }
  return `${prefix}_${out}`
}
