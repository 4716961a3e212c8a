// What every backend implementation gets from openStore, and the logic both share.
import type { RandomBytes } from '../keys/key-format.js'
import { displayPrefix, generateKey } from '../keys/key-format.js'
import { lookupHash, sealKey } from '../keys/key-crypto.js'
import type { InvalidationMessage } from '../keys/invalidation-bus.js'
import type { Clock, IdSource } from './clock.js'
import type { AccountStatus, KeyFields } from './types.js'

export interface StoreContext {
  clock: Clock
  ids: IdSource
  random: RandomBytes
  /** Server secret: root of the lookup HMAC and sealing keys. */
  secret: string
  defaultTier: string
  /** Never throws: the write already committed, and the cache TTL bounds staleness. */
  publish(message: InvalidationMessage): Promise<void>
}

export const MAX_PAGE = 1000

export function parseAccountStatus (value: string): AccountStatus {
  if (value === 'active' || value === 'suspended') return value
  throw new Error(`unexpected account status in database: ${value}`)
}

export function checkLimit (limit: number): number {
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE) {
    throw new RangeError(`limit must be an integer in 1..${MAX_PAGE}`)
  }
  return limit
}

export function withKeyDefaults (input: Partial<KeyFields> & Pick<KeyFields, 'name'>): KeyFields {
  return {
    name: input.name,
    allowedModels: input.allowedModels ?? null,
    expiresAt: input.expiresAt ?? null,
    active: input.active ?? true,
    timezone: input.timezone ?? 'UTC',
    quota: input.quota ?? null,
    dailySpendCap: input.dailySpendCap ?? null,
    monthlySpendCap: input.monthlySpendCap ?? null,
    dailyImageCap: input.dailyImageCap ?? null,
    tags: input.tags ?? [],
    rateLimitPolicy: input.rateLimitPolicy ?? null,
  }
}

export interface NewKeyMaterial {
  plaintext: string
  lookupHash: string
  sealed: string
  prefix: string
}

/** A fresh `sk-` key for row `keyId`: only the hash, sealed form and prefix are stored. */
export function newKeyMaterial (ctx: StoreContext, keyId: string): NewKeyMaterial {
  const plaintext = generateKey(ctx.random)
  return {
    plaintext,
    lookupHash: lookupHash(ctx.secret, plaintext),
    sealed: sealKey(ctx.secret, keyId, plaintext, ctx.random),
    prefix: displayPrefix(plaintext),
  }
}

/** Column name of each patchable key field, in one place for both backends. */
export const KEY_COLUMNS: { readonly [F in keyof KeyFields]-?: string } = {
  name: 'name',
  allowedModels: 'allowed_models',
  expiresAt: 'expires_at',
  active: 'active',
  timezone: 'timezone',
  quota: 'quota',
  dailySpendCap: 'daily_spend_cap',
  monthlySpendCap: 'monthly_spend_cap',
  dailyImageCap: 'daily_image_cap',
  tags: 'tags',
  rateLimitPolicy: 'rate_limit_policy',
}

export function patchEntries (patch: Partial<KeyFields>): Array<[keyof KeyFields, KeyFields[keyof KeyFields]]> {
  const out: Array<[keyof KeyFields, KeyFields[keyof KeyFields]]> = []
  for (const field of Object.keys(KEY_COLUMNS) as Array<keyof KeyFields>) {
    const value = patch[field]
    if (value !== undefined) out.push([field, value])
  }
  return out
}
