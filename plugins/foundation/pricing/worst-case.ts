// The usage a request is held for before it is sent: an upper bound on what the upstream can
// bill for it, priced by the caller with costOf. Bounds, field by field:
//
// outputTokens  the largest of the operation's max-tokens parameters (`bounds.maxTokens`, e.g.
//               max_tokens / max_completion_tokens for chat, generationConfig.maxOutputTokens for
//               genai) the body has, capped by the model's maxOutputTokens; the model's
//               maxOutputTokens when the body has none, or DEFAULT_MAX_OUTPUT_TOKENS (4096) when the
//               model declares none either. Plus the model's maxOutputTokens for each further count
//               its provider bills as output outside that limit (`outputCountsBeside`: xAI's
//               reasoning tokens). Multiplied by the number of generations asked for (the
//               largest of `bounds.count`: chat `n`, genai candidateCount, or the images).
// inputTokens   bodyBytes (one token per byte), at least 1, capped by the model's contextTokens.
//               Every text token is at least one byte of the body, so text can never exceed it.
//               Input the provider reads that the body does not hold (media by URL or file id,
//               URL-fetching and search tools, previous_response_id, cached content) makes the
//               caller set `inputPasses`: the bound is then contextTokens × inputPasses (the
//               provider refuses a longer input; a tool it runs several times reads the context
//               again each time, one pass per use). URL items also add the model's
//               `url_media_item` price (worstCaseUrlMedia) on top. A charge that still exceeds
//               the hold (a provider fault) is posted down to the account's bound, the rest
//               recorded as unrecovered (plugins/concerns/wallet/settle.ts).
// features      the features the request uses, each at the uses the hold counts (its cap):
//               costOf adds their per-call and per-use prices and applies a tier multiplier
//               (featuresAtWorst: only one that raises the price; a cheaper tier may be refused).
// images        the largest of `bounds.count` (`n`, `parameters.sampleCount`, candidateCount;
//               default 1), capped at the model's maxImages (default MAX_IMAGES, 10); for an
//               operation whose count is images, checkBillableParameters refuses a larger one first.
// characters    Unicode code points of a string `input` (speech); otherwise the body size, since a
//               code point is at least one byte.
// audioSeconds  per uploaded file, the larger of what its header claims and what its bytes allow
//               (audio-bound.ts: the WAV decoder's arithmetic, every FLAC, MP3 or ADTS frame,
//               every Ogg Opus packet's TOC duration; a format with no true bound is refused by
//               the hold); the body size bound when there is no file.
// calls         1.
// jobs          the job's units (`jobUnits`: the product of the operation's `bounds.job_units`,
//               video seconds × videos, from operations/billable-parameters.ts), else 1.
// Integer fields are clamped to Number.MAX_SAFE_INTEGER.
import type { PriceConfig } from '../config/types.js'
import { NANOS_PER_UNIT } from './money.js'
import { audioDurationBound } from './audio-bound.js'
import { sizeBoundMillis } from './audio-duration.js'
import { countUrlMedia } from './url-media.js'
import type { CompiledPrice, FeatureUsage, Usage } from '../shapes/index.js'
import type { OperationBounds, ParamPath } from '../shapes/index.js'

export const DEFAULT_MAX_OUTPUT_TOKENS = 4096
export const MAX_IMAGES = 10
/** Input tokens are bounded by bodyBytes / BYTES_PER_TOKEN: a token is at least one byte of the body, so this bound can only over-hold. */
export const BYTES_PER_TOKEN = 1

export interface WorstCaseFile {
  field: string
  size: number
  /** First bytes of the file (the multipart summary keeps 64 KiB). */
  head: Buffer
  /** All of its bytes (views of the body), when known. */
  data?: readonly Buffer[]
  mimeType: string
}

export interface WorstCaseInput {
  /** The operation's parameters that bound the answer (`plan.op.bounds`). */
  bounds: OperationBounds
  model: {
    pricing: PriceConfig
    maxOutputTokens?: number
    contextTokens?: number
    maxImages?: number
    /**
     * Output counts the provider bills beside the one the request's max-tokens limits (the
     * model operation's `meter.usage.output_tokens` paths after the first); each is held at
     * the model's maxOutputTokens.
     */
    outputCountsBeside?: number
  }
  json?: Record<string, unknown>
  multipart?: { fields: Record<string, string>; files: WorstCaseFile[] }
  /** Size of the whole request body in bytes. */
  bodyBytes: number
  /**
   * The request makes the provider read input the body does not hold: input is bounded by
   * `model.contextTokens` times this many passes instead of by the body (a RangeError without
   * a context window: the caller refuses such a request first).
   */
  inputPasses?: number
  /** The features the request uses, at the uses the hold counts. */
  features?: Readonly<Record<string, FeatureUsage>>
  /** A job's billed units (seconds × videos); 1 when absent. */
  jobUnits?: number
}

/** A positive safe integer, from a JSON number or a multipart field of digits; else undefined. */
function positiveInt (v: unknown): number | undefined {
  const n = typeof v === 'string' && /^\d{1,15}$/.test(v) ? Number(v) : v
  return typeof n === 'number' && Number.isSafeInteger(n) && n > 0 ? n : undefined
}

function valueAt (input: WorstCaseInput, path: ParamPath): unknown {
  const keys = path.keys
  const first = keys[0]
  if (first === undefined) return undefined
  let v: unknown = input.json?.[first] ?? (keys.length === 1 ? input.multipart?.fields[first] : undefined)
  for (let i = 1; i < keys.length; i++) {
    v = v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>)[keys[i] as string] : undefined
  }
  return v
}

/** The largest valid positive integer among `paths`, or undefined when none is given. */
function largest (input: WorstCaseInput, paths: readonly ParamPath[]): number | undefined {
  let best: number | undefined
  for (let i = 0; i < paths.length; i++) {
    const v = positiveInt(valueAt(input, paths[i] as ParamPath))
    if (v !== undefined && (best === undefined || v > best)) best = v
  }
  return best
}

const clamp = (n: number): number => Math.min(n, Number.MAX_SAFE_INTEGER)

/** Output tokens of one generation: the body's limit capped by the model's, or the model's, or 4096. */
export function outputTokensPerGeneration (input: WorstCaseInput): number {
  const cap = positiveInt(input.model.maxOutputTokens)
  const asked = largest(input, input.bounds.maxTokens)
  const limited = asked === undefined ? cap ?? DEFAULT_MAX_OUTPUT_TOKENS : cap === undefined ? asked : Math.min(asked, cap)
  // Counts billed as output beside the one the request's limit bounds (xAI's reasoning tokens,
  // reported outside completion_tokens): each is bounded by the model's limit alone.
  const beside = input.model.outputCountsBeside ?? 0
  return beside > 0 ? limited + beside * (cap ?? DEFAULT_MAX_OUTPUT_TOKENS) : limited
}

/** Worst-case usage of a request before it is sent; price it with costOf. */
export function worstCaseUsage (input: WorstCaseInput): Usage {
  const { bodyBytes } = input
  if (!Number.isSafeInteger(bodyBytes) || bodyBytes < 0) throw new RangeError(`bodyBytes must be a non-negative integer, got ${bodyBytes}`)

  const { count, countIsImages } = input.bounds
  const asked = largest(input, count) ?? 1
  // Images are bounded even where the count is choices: a per-image model may serve any operation.
  const images = Math.min(asked, positiveInt(input.model.maxImages) ?? MAX_IMAGES)
  const generations = countIsImages ? images : asked
  const outputTokens = clamp(outputTokensPerGeneration(input) * generations)

  const context = positiveInt(input.model.contextTokens)
  const byBytes = Math.max(1, Math.ceil(bodyBytes / BYTES_PER_TOKEN))
  let inputTokens = context === undefined ? byBytes : Math.min(byBytes, context)
  if (input.inputPasses !== undefined) {
    if (context === undefined) throw new RangeError('input the body does not bound needs the model\'s context window')
    inputTokens = clamp(context * Math.max(1, input.inputPasses))
  }

  const text = input.json?.input
  const characters = typeof text === 'string' ? countCodePoints(text) : bodyBytes

  const files = input.multipart?.files ?? []
  const millis = files.length > 0
    ? files.reduce((sum, f) => sum + audioDurationBound(f).millis, 0)
    : sizeBoundMillis(bodyBytes)

  return {
    inputTokens,
    outputTokens,
    cachedInputTokens: 0,
    images,
    audioSeconds: millis / 1000,
    characters,
    calls: 1,
    jobs: input.jobUnits ?? 1,
    reported: false,
    ...(input.features === undefined ? {} : { features: input.features })
  }
}

/**
 * The features as the hold counts them, given the price list: per-use and per-call ones at the
 * uses given (their caps), and a multiplier applied only where it raises the price — a cheaper
 * tier (flex) the provider may not grant is held at the full price.
 */
export function featuresAtWorst (price: CompiledPrice, features: Readonly<Record<string, FeatureUsage>>): Record<string, FeatureUsage> {
  const out: Record<string, FeatureUsage> = {}
  for (const [name, f] of Object.entries(features)) {
    const p = price.features?.get(name)
    out[name] = p?.charge === 'multiplier' && p.factor < NANOS_PER_UNIT ? { ...f, uses: 0 } : f
  }
  return out
}

/** Code points, the way a string iterates: a surrogate pair counts once, a lone surrogate once. */
function countCodePoints (s: string): number {
  let n = 0
  for (let i = 0; i < s.length; i += (s.codePointAt(i) ?? 0) > 0xffff ? 2 : 1) n++
  return n
}

/** Media items the request sends by URL (url-media.ts); multipart bodies upload theirs. */
export function worstCaseUrlMedia (input: WorstCaseInput): number {
  return input.json === undefined ? 0 : countUrlMedia(input.json)
}
