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
}
