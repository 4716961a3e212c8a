import type { LimitsConfig } from '../../foundation/config/types.js'

/** One tier as the limiter uses it. */
export interface Policy {
  readonly name: string
  readonly rank: number
  readonly requestsPerMinute: number
  readonly concurrentStreams: number
  /** This tier as the limits of a request whose key has no policy of its own (built once). */
  readonly alone: RequestLimits
}

/**
 * The limits one request is admitted under: its account's tier bounds the sum of every key of
 * the account; a key with a policy of its own (never ranked above the tier: see Policies) is
 * also held to that policy alone.
 */
export interface RequestLimits {
  readonly account: Policy
  /** The key's own policy when it differs from the account's tier; null: the account's bound is the key's. */
  readonly key: Policy | null
}

/** The tiers of `limits`, compiled once; `resolve` runs per request and allocates nothing. */
export interface Policies {
  readonly byName: ReadonlyMap<string, Policy>
  readonly fallback: Policy
  /** Ranked lowest first (the admin API lists them in this order). */
  readonly ranked: readonly Policy[]
  /**
   * The policy of a request: the key's policy, else the account's tier, else the platform
   * default. A key policy ranked above its account's tier (the tier was lowered after the
   * policy was bound) is clamped to the tier. A name no longer defined counts as absent.
   */
  resolve (keyPolicy: string | null, accountTier: string): Policy
  /** The account's tier (the platform default when the tier is no longer defined): it bounds the sum of its keys. */
  tier (accountTier: string): Policy
}

class Tier implements Policy {
  readonly alone: RequestLimits
  constructor (readonly name: string, readonly rank: number, readonly requestsPerMinute: number, readonly concurrentStreams: number) {
    this.alone = Object.freeze({ account: this, key: null })
  }
}

export function compilePolicies (config: LimitsConfig): Policies {
  const byName = new Map<string, Policy>()
  for (const [name, t] of Object.entries(config.tiers)) {
    byName.set(name, Object.freeze(new Tier(name, t.rank, t.requests_per_minute, t.concurrent_streams)))
  }
  const fallback = byName.get(config.default_tier)
  if (fallback === undefined) throw new Error(`limits.default_tier "${config.default_tier}" is not a tier`)
  const ranked = Object.freeze([...byName.values()].sort((a, b) => a.rank - b.rank || (a.name < b.name ? -1 : 1)))
  return {
    byName,
    fallback,
    ranked,
    resolve (keyPolicy, accountTier) {
      const tier = byName.get(accountTier) ?? fallback
      if (keyPolicy === null) return tier
      const own = byName.get(keyPolicy)
      if (own === undefined || own.rank > tier.rank) return tier
      return own
    },
    tier (accountTier) {
      return byName.get(accountTier) ?? fallback
    }
  }
}
