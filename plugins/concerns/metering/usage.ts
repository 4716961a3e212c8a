// The usage of one request in billable units, as read from the upstream's answer (or estimated
// by the gateway when the upstream said nothing believable). The shape is plugins/foundation/shapes'.

import type { Usage } from '../../foundation/shapes/index.js'

export type { Usage }

export type UsageCounts = Omit<Usage, 'reported' | 'features' | 'imageTier'>
export type UsageField = keyof UsageCounts

/** Numbers as the upstream sent them, not yet believed. */
export type RawUsage = { readonly [K in UsageField]?: unknown }

export interface SanitizedUsage {
  /** The fields that passed; a missing field was absent or rejected. */
  counts: Partial<UsageCounts>
  /** Fields that were present but not believable (negative, NaN, fractional, too big, not a number). */
  rejected: UsageField[]
}

/** More tokens than this in one request is not a real answer. */
export const MAX_TOKENS = 1_000_000_000

interface Limit { readonly max: number, readonly integer: boolean }

const LIMITS: Readonly<Record<UsageField, Limit>> = {
  inputTokens: { max: MAX_TOKENS, integer: true },
  outputTokens: { max: MAX_TOKENS, integer: true },
  cachedInputTokens: { max: MAX_TOKENS, integer: true },
  cacheWriteTokens: { max: MAX_TOKENS, integer: true },
  cacheWrite1hTokens: { max: MAX_TOKENS, integer: true },
  images: { max: 10_000, integer: true },
  // Eleven and a half days of audio in one request.
  audioSeconds: { max: 1_000_000, integer: false },
  characters: { max: MAX_TOKENS, integer: true },
  calls: { max: 1_000_000, integer: true },
  jobs: { max: 1_000_000, integer: true }
}

const FIELDS = Object.keys(LIMITS) as UsageField[]

export function emptyUsage (): Usage {
  return { inputTokens: 0, outputTokens: 0, cachedInputTokens: 0, images: 0, audioSeconds: 0, characters: 0, calls: 0, jobs: 0, reported: true }
}

/** The value when it is a believable count for `field`, else undefined. Never clamps. */
export function sanitizeCount (field: UsageField, value: unknown): number | undefined {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) return undefined
  const limit = LIMITS[field]
  if (limit.integer && !Number.isInteger(value)) return undefined
  if (value > limit.max) return undefined
  // -0 is a number ≥ 0; store it as 0.
  return value === 0 ? 0 : value
}

/**
 * Keeps the believable fields of an upstream report. A hostile value is dropped (and listed in
 * `rejected`) rather than clamped: clamping -5 to 0 or 1e15 to the limit would turn a lie into
 * a bill. A cached count larger than the input count is rejected too, since it would price
 * input tokens at the cached rate that were never cached.
 */
export function sanitize (raw: RawUsage): SanitizedUsage {
  const counts: Partial<UsageCounts> = {}
  const rejected: UsageField[] = []
  for (const field of FIELDS) {
    const value = raw[field]
    if (value === undefined || value === null) continue
    const ok = sanitizeCount(field, value)
    if (ok === undefined) rejected.push(field)
    else counts[field] = ok
  }
  const cached = counts.cachedInputTokens
  if (cached !== undefined && counts.inputTokens !== undefined && cached > counts.inputTokens) {
    delete counts.cachedInputTokens
    rejected.push('cachedInputTokens')
  }
  // Cache writes are part of the input too, beside the reads: more than the input is not a report.
  const writes = (counts.cacheWriteTokens ?? 0) + (counts.cacheWrite1hTokens ?? 0)
  if (writes > 0 && counts.inputTokens !== undefined && writes + (counts.cachedInputTokens ?? 0) > counts.inputTokens) {
    for (const f of ['cacheWriteTokens', 'cacheWrite1hTokens'] as const) {
      if (counts[f] === undefined) continue
      delete counts[f]
      rejected.push(f)
    }
  }
  return { counts, rejected }
}

/**
 * A token count made of parts (e.g. uncached + cache reads + cache writes): undefined when the
 * required part is absent, NaN (which sanitize rejects) when any present part is not believable.
 * Absent optional parts count as 0, as providers omit zero counts.
 */
export function tokenSum (required: unknown, ...optional: unknown[]): number | undefined {
  if (required === undefined || required === null) return undefined
  let sum = sanitizeCount('inputTokens', required)
  if (sum === undefined) return Number.NaN
  for (const part of optional) {
    if (part === undefined || part === null) continue
    const n = sanitizeCount('inputTokens', part)
    if (n === undefined) return Number.NaN
    sum += n
  }
  return sum
}

export interface TokenEstimate { inputTokens: number, outputTokens: number }

/** Tokens guessed from text: about four characters per token. */
export function tokensFromChars (chars: number): number {
  if (!Number.isFinite(chars) || chars <= 0) return 0
  return Math.min(MAX_TOKENS, Math.ceil(chars / 4))
}

/**
 * Token usage from an upstream report, each missing or rejected count replaced by the estimate.
 * `reported` only when both counts came from the upstream and nothing it sent was rejected.
 * A function as `estimate` is called only when a count is missing: a request whose usage was
 * reported never pays for the estimate (tokenizers.ts).
 */
export function tokenUsage (raw: RawUsage | undefined, estimate: TokenEstimate | (() => TokenEstimate)): Usage {
  const { counts, rejected } = sanitize(raw ?? {})
  const usage = emptyUsage()
  const guess = counts.inputTokens !== undefined && counts.outputTokens !== undefined
    ? undefined
    : typeof estimate === 'function' ? estimate() : estimate
  usage.inputTokens = counts.inputTokens ?? guess?.inputTokens ?? 0
  usage.outputTokens = counts.outputTokens ?? guess?.outputTokens ?? 0
  // A cached count only means something next to the reported input count it is part of.
  usage.cachedInputTokens = counts.inputTokens !== undefined ? counts.cachedInputTokens ?? 0 : 0
  if (counts.inputTokens !== undefined) {
    if ((counts.cacheWriteTokens ?? 0) > 0) usage.cacheWriteTokens = counts.cacheWriteTokens
    if ((counts.cacheWrite1hTokens ?? 0) > 0) usage.cacheWrite1hTokens = counts.cacheWrite1hTokens
  }
  usage.reported = counts.inputTokens !== undefined && counts.outputTokens !== undefined && rejected.length === 0
  return usage
}
