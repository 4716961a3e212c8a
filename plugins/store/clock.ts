// Time and id sources are injected so tests can move time and replay ids.
import { randomBytes } from 'node:crypto'
import { toBase62 } from '../keys/key-format.js'

export interface Clock {
  now(): Date
}

export const systemClock: Clock = { now: () => new Date() }

/** Returns a new id with the given prefix, e.g. `acct` → `acct_…`. */
export type IdSource = (prefix: string) => string

const ID_BYTES = 16

/** `<prefix>_` + 22 base62 chars of 128 random bits. */
export const randomIds: IdSource = (prefix) => {
  let value = 0n
  for (const byte of randomBytes(ID_BYTES)) value = (value << 8n) | BigInt(byte)
  return `${prefix}_${toBase62(value, 22)}`
}
