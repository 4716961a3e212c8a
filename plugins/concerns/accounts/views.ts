// What the admin API and CLI print: snake_case JSON, money as decimal strings, times as ISO 8601.
import type { ModelConfig } from '../../foundation/config/types.js'
import type { Account, ApiKeyRecord } from '../../foundation/store/index.js'

export interface AccountView {
  id: string
  name: string
  status: 'active' | 'suspended'
  tier: string
  topped_up: boolean
  /** Models the account's keys may use (null: all). */
  allowed_models: string[] | null
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
  /** The status requests meet: the stored one (admin API) when there is one, else the configured one. */
  status: ModelConfig['status']
  /** The status gateway.yaml declares. */
  configured_status: ModelConfig['status']
  /** The status the admin API stored, overriding the configured one; null when none. */
  stored_status: ModelConfig['status'] | null
  /** When the admin API stored it; null when none. */
  status_updated_at: string | null
  /** Whether the pricing is complete (every status but draft needs it). */
  pricing_complete: boolean
  /** What keeps the pricing from being complete: the field (`pricing.output`, `operations.<name>`) and why. */
  pricing_problems: PricingProblemView[]
  operations: string[]
  capabilities: string[]
  pricing: ModelConfig['pricing']
  fallbacks: string[]
  max_output_tokens: number | null
  requires_topup: boolean
}

export interface PricingProblemView {
  field: string
  message: string
}

/** What the admin API knows of a model's status besides gateway.yaml. */
export interface ModelStatusFacts {
  status: ModelConfig['status']
  stored: { status: ModelConfig['status'], updatedAt: Date } | null
  pricingProblems: PricingProblemView[]
}

export interface Page<T> {
  data: T[]
  has_more: boolean
  /** Pass as `after` to get the next page; null on the last page. */
  next_after: string | null
}

/** Money in the admin API: the same rendering as every other money field (plugins/foundation/pricing). */
export { formatMoney as formatMinorUnits } from '../../foundation/pricing/money.js'
import type { RequestLogRow } from '../../foundation/store/request-log/types.js'
import { formatMoney as formatMinorUnits } from '../../foundation/pricing/money.js'

const money = (v: bigint | null): string | null => (v === null ? null : formatMinorUnits(v))
const iso = (d: Date | null): string | null => (d === null ? null : d.toISOString())

export function accountView (a: Account): AccountView {
  return {
    id: a.id,
    name: a.name,
    status: a.status,
    tier: a.tier,
    topped_up: a.toppedUp,
    allowed_models: a.allowedModels,
    created_at: a.createdAt.toISOString(),
  }
}

export function keyStatus (k: ApiKeyRecord, now: Date): KeyStatus {
  if (k.revokedAt !== null) return 'revoked'
  if (k.expiresAt !== null && k.expiresAt.getTime() <= now.getTime()) return 'expired'
  return k.active ? 'active' : 'inactive'
}

export function keyView (k: ApiKeyRecord, now: Date): KeyView {
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

export function modelView (m: ModelConfig, facts: ModelStatusFacts): ModelView {
  return {
    id: m.id,
    status: facts.status,
    configured_status: m.status,
    stored_status: facts.stored?.status ?? null,
    status_updated_at: facts.stored?.updatedAt.toISOString() ?? null,
    pricing_complete: facts.pricingProblems.length === 0,
    pricing_problems: facts.pricingProblems.map((p) => ({ ...p })),
    operations: Object.keys(m.operations),
    capabilities: [...(m.capabilities ?? [])],
    // Prices stay the decimal strings of gateway.yaml: exact, and what the operator wrote.
    pricing: { ...m.pricing },
    fallbacks: [...(m.fallbacks ?? [])],
    max_output_tokens: m.max_output_tokens ?? null,
    requires_topup: m.requires_topup === true,
  }
}

/** One request log row; money as decimal strings, usage as counts. Never carries a key. */
export interface RequestLogView {
  request_id: string
  account_id: string | null
  key_id: string | null
  route: string
  operation: string
  requested_model: string | null
  answered_model: string | null
  status: number
  outcome: string
  error_code: string | null
  stream: boolean
  usage: Record<string, number | { quality: string, size: string }> | null
  /** The features the request used: uses, whether the provider reported them, and the price charged. */
  features: Record<string, { uses: number, reported: boolean, charge: string, price: string | null }> | null
  usage_reported: boolean | null
  cost: string | null
  held: string | null
  hold_id: string | null
  posting_id: string | null
  /** The part of `cost` above `held`, posted all the same; null when the charge fit. */
  overage: string | null
  /** The part of the reported cost beyond the account's bound, not posted (the operator's loss); null when none. */
  unrecovered: string | null
  billing_status: string
  /** The `X-Idempotency-Key` the request was sent with (its retries share it), or null. */
  idempotency_key: string | null
  overhead_ms: number | null
  upstream_ms: number | null
  total_ms: number
  created_at: string
}

export function requestLogView (r: RequestLogRow): RequestLogView {
  return {
    request_id: r.requestId,
    account_id: r.accountId,
    key_id: r.keyId,
    route: r.route,
    operation: r.operation,
    requested_model: r.requestedModel,
    answered_model: r.answeredModel,
    status: r.status,
    outcome: r.outcome,
    error_code: r.errorCode,
    stream: r.stream,
    usage: r.usage === null
      ? null
      : {
          input_tokens: r.usage.inputTokens,
          output_tokens: r.usage.outputTokens,
          cached_input_tokens: r.usage.cachedInputTokens,
          ...(r.usage.cacheWriteTokens === undefined ? {} : { cache_write_tokens: r.usage.cacheWriteTokens }),
          ...(r.usage.cacheWrite1hTokens === undefined ? {} : { cache_write_1h_tokens: r.usage.cacheWrite1hTokens }),
          images: r.usage.images,
          ...(r.usage.imageTier === undefined ? {} : { image_tier: r.usage.imageTier }),
          audio_seconds: r.usage.audioSeconds,
          characters: r.usage.characters,
          calls: r.usage.calls,
          jobs: r.usage.jobs
        },
    features: r.usage?.features ?? null,
    usage_reported: r.usageReported,
    cost: money(r.cost),
    held: money(r.held),
    hold_id: r.holdId,
    posting_id: r.postingId,
    overage: money(r.overage),
    unrecovered: money(r.unrecovered),
    idempotency_key: r.idempotencyKey,
    billing_status: r.billingStatus,
    overhead_ms: r.overheadMs,
    upstream_ms: r.upstreamMs,
    total_ms: r.totalMs,
    created_at: r.createdAt.toISOString()
  }
}
