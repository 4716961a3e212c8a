// What the admin API and CLI print: snake_case JSON, money as decimal strings, times as ISO 8601.
import type { ModelConfig } from '../config/types.js'
import type { Account, ApiKeyRecord } from '../store/index.js'
import { MINOR_UNIT_DIGITS } from './constants.js'

export interface AccountView {
  id: string
  name: string
  status: 'active' | 'suspended'
  tier: string
  topped_up: boolean
  created_at: string
}

export type KeyStatus = 'active' | 'inactive' | 'expired' | 'revoked'

export interface KeyView {
  id: string
  account_id: string
  name: string
  /** First characters of the plaintext, for recognising a key; never enough to use it. */
  prefix: string
  /** The spec's key state, derived at the time of the answer. */
  status: KeyStatus
  allowed_models: string[] | null
  expires_at: string | null
  active: boolean
  revoked: boolean
  revoked_at: string | null
  timezone: string
  quota: string | null
  daily_spend_cap: string | null
  monthly_spend_cap: string | null
  daily_image_cap: number | null
  tags: string[]
  rate_limit_policy: string | null
  legacy: boolean
  created_at: string
}

/** A key with its plaintext: only the create (201) and reveal answers have this shape. */
export interface RevealedKeyView extends KeyView {
  key: string
}

export interface ModelView {
  id: string
  status: ModelConfig['status']
  operations: string[]
  capabilities: string[]
  pricing: ModelConfig['pricing']
  fallbacks: string[]
  max_output_tokens: number | null
  requires_topup: boolean
}

export interface Page<T> {
  data: T[]
  has_more: boolean
  /** Pass as `after` to get the next page; null on the last page. */
  next_after: string | null
}

const SCALE = 10n ** BigInt(MINOR_UNIT_DIGITS)

/**
 * Minor units as a decimal string with 2 to MINOR_UNIT_DIGITS decimals, trailing zeros past
 * the second trimmed: 25_000_000_000n → "25.00", 1_500_000n → "0.0015". Same rendering as
 * plugins/pricing formatMoney, so every money field of the gateway reads alike.
 */
export function formatMinorUnits(v: bigint): string {
  const negative = v < 0n
  const abs = negative ? -v : v
  let fraction = (abs % SCALE).toString().padStart(MINOR_UNIT_DIGITS, '0').replace(/0+$/, '')
  if (fraction.length < 2) fraction = fraction.padEnd(2, '0')
  return `${negative ? '-' : ''}${(abs / SCALE).toString()}.${fraction}`
}

const money = (v: bigint | null): string | null => (v === null ? null : formatMinorUnits(v))
const iso = (d: Date | null): string | null => (d === null ? null : d.toISOString())

export function accountView(a: Account): AccountView {
  return {
    id: a.id,
    name: a.name,
    status: a.status,
    tier: a.tier,
    topped_up: a.toppedUp,
    created_at: a.createdAt.toISOString(),
  }
}

export function keyStatus(k: ApiKeyRecord, now: Date): KeyStatus {
  if (k.revokedAt !== null) return 'revoked'
  if (k.expiresAt !== null && k.expiresAt.getTime() <= now.getTime()) return 'expired'
  return k.active ? 'active' : 'inactive'
}

export function keyView(k: ApiKeyRecord, now: Date): KeyView {
  return {
    id: k.id,
    account_id: k.accountId,
    name: k.name,
    prefix: k.prefix,
    status: keyStatus(k, now),
    allowed_models: k.allowedModels === null ? null : [...k.allowedModels],
    expires_at: iso(k.expiresAt),
    active: k.active,
    revoked: k.revokedAt !== null,
    revoked_at: iso(k.revokedAt),
    timezone: k.timezone,
    quota: money(k.quota),
    daily_spend_cap: money(k.dailySpendCap),
    monthly_spend_cap: money(k.monthlySpendCap),
    daily_image_cap: k.dailyImageCap,
    tags: [...k.tags],
    rate_limit_policy: k.rateLimitPolicy,
    legacy: k.legacy,
    created_at: k.createdAt.toISOString(),
  }
}

export function modelView(m: ModelConfig): ModelView {
  return {
    id: m.id,
    status: m.status,
    operations: Object.keys(m.operations),
    capabilities: [...(m.capabilities ?? [])],
    // Prices stay the decimal strings of gateway.yaml: exact, and what the operator wrote.
    pricing: { ...m.pricing },
    fallbacks: [...(m.fallbacks ?? [])],
    max_output_tokens: m.max_output_tokens ?? null,
    requires_topup: m.requires_topup === true,
  }
}
