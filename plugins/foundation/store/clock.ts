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

const TIME_CHARS = 8 // 62^8 ms ≈ 6,900 years from the epoch
const RANDOM_CHARS = ID_CHARS - TIME_CHARS

function randomChars (n: number): string {
  let out = ''
  while (out.length < n) {
    const b = randomByte()
    if (b < 248) out += BASE62.charAt(b % 62)
  }
  return out
}

/**
 * `<prefix>_` + 22 base62 characters: 8 of the current time in milliseconds, then 14 random
 * ones (≈ 83 bits; bytes ≥ 248 are rejected so every character is uniform over the 62). The
 * alphabet is in ASCII order, so ids sort by creation time: new rows land at the end of their
 * B-tree indexes (a hold, an entry and a log row per request) instead of on random pages, which
 * keeps the pages one commit writes few.
 */
export const randomIds: IdSource = (prefix) => {
  let t = Date.now()
  let time = ''
  for (let i = 0; i < TIME_CHARS; i++) {
    time = BASE62.charAt(t % 62) + time
    t = Math.floor(t / 62)
  }
  return `${prefix}_${time}${randomChars(RANDOM_CHARS)}`
}
