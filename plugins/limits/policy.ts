import type { LimitsConfig } from '../config/types.js'

/** One tier as the limiter uses it. */
export interface Policy {
  readonly name: string
  readonly rank: number
  readonly requestsPerMinute: number
  readonly concurrentStreams: number
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
}

export function compilePolicies (config: LimitsConfig): Policies {
  const byName = new Map<string, Policy>()
  for (const [name, t] of Object.entries(config.tiers)) {
    byName.set(name, Object.freeze({ name, rank: t.rank, requestsPerMinute: t.requests_per_minute, concurrentStreams: t.concurrent_streams }))
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
    }
  }
}
