// How much a request's features were used, read from the provider's answer where its wire
// format says it (operations.<name>.features.<feature>.report), else the declared worst case.
// Only requests that use a feature get a reader; the meter's fast path is untouched otherwise.
//
// The reader sees "answer objects": the JSON answer (or each element of a JSON-array stream),
// and for a stream the object each event carries (a chat chunk, a messages `message` or
// `message_delta`, a responses event's `response`, a genai chunk). Per report kind:
//   usage            a count at a path of the answer's `usage` / `usageMetadata`: the largest
//                    seen (streams repeat running totals); reported once a usage object came.
//   output_items     answer `output[]` items of the types, counted: the largest count seen;
//                    reported once an `output` list came.
//   candidates_with  any candidate of any answer object carrying the field: one use;
//                    reported once a `candidates` list came.
//   answer_value     the last value the answer states for the field, in the values: applied;
//                    reported once the field came.
// A count the provider states that is not believable (negative, fractional, absurd) is not a
// report: the worst case is charged. So is an answer whose token usage was not reported (a cut
// stream, a client gone): what it said of its features so far may not be all of it.
import type { TokenDialectName } from '../../foundation/config/types.js'
import type { FeatureReport } from '../../foundation/operations/feature-compile.js'
import { isRecord } from './body-reader.js'
import { sanitizeCount } from './usage.js'
import type { FeatureUsage } from '../../foundation/shapes/index.js'

/** A feature a request uses, as the meter needs it. */
export interface MeteredFeature {
  readonly name: string
  readonly charge: 'per_call' | 'per_use' | 'multiplier' | 'tokens'
  readonly report: FeatureReport | null
  /** Uses the hold counted: what is charged when the answer does not say. */
  readonly worstUses: number
}

export interface FeatureReader {
  /** One answer object (see above). */
  answer (value: unknown): void
  /** One event's data of a stream of this dialect. */
  event (data: Record<string, unknown>): void
  /** `complete`: the answer reported its token usage, so what it said is all it says. */
  result (complete: boolean): Record<string, FeatureUsage>
}

interface Seen { reported: boolean, count: number }

function at (value: unknown, path: readonly string[]): unknown {
  let v = value
  for (const key of path) v = isRecord(v) ? v[key] : undefined
  return v
}

/** The answer object an event of this dialect carries, or null. */
function answerOfEvent (dialect: TokenDialectName, data: Record<string, unknown>): unknown {
  switch (dialect) {
    case 'responses': return isRecord(data.response) ? data.response : null
    case 'messages': return isRecord(data.message) ? data.message : data
    default: return data
  }
}

function read (report: FeatureReport, answer: Record<string, unknown>, seen: Seen): void {
  switch (report.kind) {
    case 'usage': {
      const usage = answer.usage ?? answer.usageMetadata
      if (!isRecord(usage)) return
      const raw = at(usage, report.path)
      const n = raw === undefined || raw === null ? 0 : sanitizeCount('calls', raw)
      if (n === undefined) return // not believable: left to the worst case
      seen.reported = true
      seen.count = Math.max(seen.count, n)
      return
    }
    case 'output_items': {
      const output = answer.output
      if (!Array.isArray(output)) return
      let n = 0
      for (const item of output) if (isRecord(item) && typeof item.type === 'string' && report.types.has(item.type)) n++
      seen.reported = true
      seen.count = Math.max(seen.count, n)
      return
    }
    case 'candidates_with': {
      const candidates = answer.candidates
      if (!Array.isArray(candidates)) return
      seen.reported = true
      if (candidates.some((c) => isRecord(c) && c[report.field] !== undefined && c[report.field] !== null)) seen.count = 1
      return
    }
    case 'answer_value': {
      const v = at(answer, report.path)
      if (v === undefined || v === null) return
      seen.reported = true
      seen.count = (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') && report.values.has(v) ? 1 : 0
    }
  }
}

/** What one feature costs in uses, given what the answer said (`seen`) or did not. */
function usageOf (f: MeteredFeature, seen: Seen | undefined): FeatureUsage {
  const { charge } = f
  if (charge === 'tokens') return { charge, uses: 1, reported: false }
  if (seen === undefined || !seen.reported) return { charge, uses: charge === 'per_use' ? f.worstUses : 1, reported: false }
  return { charge, uses: charge === 'per_use' ? seen.count : Math.min(1, seen.count), reported: true }
}

/** The declared worst case of every feature: what is charged when nothing could be read. */
export function worstFeatureUsage (features: readonly MeteredFeature[]): Record<string, FeatureUsage> {
  const out: Record<string, FeatureUsage> = {}
  for (const f of features) out[f.name] = usageOf(f, undefined)
  return out
}

export function createFeatureReader (dialect: TokenDialectName, features: readonly MeteredFeature[]): FeatureReader {
  const reading = features.filter((f) => f.report !== null && f.charge !== 'tokens')
  const seen = new Map<string, Seen>(reading.map((f) => [f.name, { reported: false, count: 0 }]))
  const answer = (value: unknown): void => {
    if (!isRecord(value)) return
    for (const f of reading) read(f.report as FeatureReport, value, seen.get(f.name) as Seen)
  }
  return {
    answer,
    event: (data) => { answer(answerOfEvent(dialect, data)) },
    result (complete) {
      if (!complete) return worstFeatureUsage(features)
      const out: Record<string, FeatureUsage> = {}
      for (const f of features) out[f.name] = usageOf(f, seen.get(f.name))
      return out
    }
  }
}
