// The usage of one request in billable units. plugins/concerns/metering produces the same shape from an
// upstream answer; plugins/foundation/pricing/worst-case.ts produces it from a request before it is sent.
// Keep the field names in step with plugins/concerns/metering.

export interface Usage {
  /** Prompt tokens, cached ones included (cachedInputTokens ≤ inputTokens). */
  inputTokens: number
  outputTokens: number
  /** The part of inputTokens served from the provider's prompt cache. */
  cachedInputTokens: number
  /**
   * The part of inputTokens written to the provider's prompt cache with the default (5-minute)
   * lifetime, billed at `cache_write` (Anthropic: 1.25 × input). Absent: none. Disjoint from
   * cachedInputTokens and cacheWrite1hTokens.
   */
  cacheWriteTokens?: number
  /** The part of inputTokens written with a 1-hour lifetime, billed at `cache_write_1h` (2 × input). */
  cacheWrite1hTokens?: number
  images: number
  /** Seconds of input audio; may be fractional (billed per started millisecond). */
  audioSeconds: number
  /** Input characters, counted in Unicode code points. */
  characters: number
  calls: number
  jobs: number
  /**
   * The quality and size the images were rendered at, for a list priced by both
   * (`pricing.image_prices`): each image is billed at that entry. Absent: the list's dearest.
   */
  imageTier?: ImageTier
  /** True when the upstream reported the usage, false when the gateway estimated it. */
  reported: boolean
  /**
   * The operation features the request used (operations.<name>.features), by name: absent
   * when it used none (the common case costs nothing more).
   */
  features?: Readonly<Record<string, FeatureUsage>>
}

/** How much one feature was used. */
export interface FeatureUsage {
  /** How the provider charges it (operations.<name>.features.<feature>.charge). */
  charge: 'per_call' | 'per_use' | 'multiplier' | 'tokens'
  /** Uses (per_use), 0 or 1 (per_call, multiplier: applied or not), 1 (tokens: used). */
  uses: number
  /** True when the provider's answer said it; false when the declared worst case is charged. */
  reported: boolean
}

/** One entry of a per-image price table: `quality` × `size` (gpt-image-1 `high` × `1536x1024`). */
export interface ImageTier {
  quality: string
  size: string
}
