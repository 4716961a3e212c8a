// The usage of one request in billable units. plugins/metering produces the same shape from an
// upstream answer; plugins/pricing/worst-case.ts produces it from a request before it is sent.
// Keep the field names in step with plugins/metering.

export interface Usage {
  /** Prompt tokens, cached ones included (cachedInputTokens ≤ inputTokens). */
  inputTokens: number
  outputTokens: number
  /** The part of inputTokens served from the provider's prompt cache. */
  cachedInputTokens: number
  images: number
  /** Seconds of input audio; may be fractional (billed per started millisecond). */
  audioSeconds: number
  /** Input characters, counted in Unicode code points. */
  characters: number
  calls: number
  jobs: number
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
