// Which declared features a request uses, read once from its body and query before anything is
// held: every entry of a closed list (tools) must be plain or mark a feature, a query parameter
// the operation forwards must have one of its meterable values, and each feature used gets the
// uses the hold counts. What a model then does with them (prices, refuses) is modelFeatureRefusal.
//
// Refusals, all before the hold and before anything is forwarded:
//   REQUEST_INVALID              a uses cap (max_uses, max_tool_calls) that is not a positive
//                                safe integer: the request is malformed whatever the model.
//   MODEL_PARAMETER_UNSUPPORTED  an entry of a closed list of an unknown type, a query value the
//                                operation cannot meter, a feature the model refuses or does not
//                                price, input the gateway cannot count on a model without a
//                                context window. `param` names the request field.
import { gatewayError } from '../errors/index.js'
import type { MatchValue } from '../config/types.js'
import { fileReferencePaths } from '../pricing/url-media.js'
import { paramValue } from './billable-parameters.js'
import type { CompiledFeature, ListScan, OperationFeatures } from './feature-compile.js'
import type { ParsedBody } from '../shapes/index.js'

/** A feature one request uses. */
export interface FeatureUse {
  readonly feature: CompiledFeature
  /** The request field that marks it: `tools[1].type`, `tools[0].googleSearch`, `service_tier`, `alt`. */
  readonly param: string
  /** Uses the hold counts: the request's cap, or the feature's default (1 when it has no uses). */
  readonly uses: number
}

const NONE: readonly FeatureUse[] = Object.freeze([])
const isRecord = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v)
const DIGITS = /^[0-9]{1,15}$/

/** A client value shown in a message: short, and never more than a short string. */
function shown (v: unknown): string {
  const text = typeof v === 'string' ? v : JSON.stringify(v) ?? String(v)
  return JSON.stringify(text.length > 40 ? text.slice(0, 37) + '...' : text)
}

/** application/x-www-form-urlencoded decoding; null when malformed. */
function decode (raw: string): string | null {
  if (!raw.includes('%') && !raw.includes('+')) return raw
  try {
    return decodeURIComponent(raw.replace(/\+/g, ' '))
  } catch {
    return null
  }
}

/**
 * The query's parameters as [lower-case decoded name, decoded value] pairs, in order, repeats
 * kept; a name that does not decode is left out (it is not forwarded either).
 */
export function queryPairs (query: string): Array<[string, string]> {
  const out: Array<[string, string]> = []
  if (query.length <= 1) return out
  for (const pair of query.slice(1).split('&')) {
    if (pair === '') continue
    const eq = pair.indexOf('=')
    const name = decode(eq === -1 ? pair : pair.slice(0, eq))
    if (name === null) continue
    out.push([name.toLowerCase(), eq === -1 ? '' : decode(pair.slice(eq + 1)) ?? '\uFFFD'])
  }
  return out
}

/** A uses cap as the request states it: a positive safe integer, absent, or REQUEST_INVALID. */
function usesCap (v: unknown, param: string, multipart: boolean): number | undefined {
  if (v === undefined || v === null) return undefined
  const n = typeof v === 'string' && multipart && DIGITS.test(v) ? Number(v) : v
  if (typeof n === 'number' && Number.isSafeInteger(n) && n > 0) return n
  throw gatewayError('REQUEST_INVALID', { param, detail: `"${param}" must be a positive integer.` })
}

/** Adds a use of `feature`, merging with an earlier match of the same feature. */
function record (found: Map<string, { feature: CompiledFeature, param: string, uses: number }>, feature: CompiledFeature, param: string, uses: number): void {
  const prior = found.get(feature.name)
  // Each matched entry brings its own cap (max_uses); a request-wide cap counts once.
  if (prior === undefined) found.set(feature.name, { feature, param, uses })
  else if (feature.uses?.itemField != null) prior.uses += uses
}

/** The uses one matched list entry brings. */
function entryUses (feature: CompiledFeature, entry: Record<string, unknown>, param: string, body: ParsedBody, multipart: boolean): number {
  const u = feature.uses
  if (u === null) return 1
  if (u.itemField !== null) {
    const own = usesCap(entry[u.itemField], `${param}.${u.itemField}`, multipart)
    if (own !== undefined) return own
  }
  if (u.param !== null) {
    const cap = usesCap(paramValue(body, u.param), u.param.name, multipart)
    if (cap !== undefined) return cap
  }
  return u.default
}

/**
 * The value at a list scan's field (a dotted path) in one entry, when it is a scalar that can mark
 * a feature; undefined otherwise (absent, null, an object or a list: e.g. code_interpreter's
 * `container` object, whose own fields other scans read, while a string there is an id).
 */
export function entryMark (entry: Record<string, unknown>, keys: readonly string[]): MatchValue | undefined {
  let v: unknown = entry
  for (let i = 0; i < keys.length; i++) v = isRecord(v) ? v[keys[i] as string] : undefined
  return typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean' ? v : undefined
}

function scanList (scan: ListScan, body: ParsedBody, found: Map<string, { feature: CompiledFeature, param: string, uses: number }>): void {
  const list = paramValue(body, scan.list)
  if (!Array.isArray(list)) return
  for (let i = 0; i < list.length; i++) {
    const entry: unknown = list[i]
    if (!isRecord(entry)) continue // the provider refuses a malformed entry itself
    const at = `${scan.list.name}[${i}]`
    const mark = scan.fieldKeys === null ? undefined : entryMark(entry, scan.fieldKeys)
    const marks: Array<[MatchValue, string]> = scan.fieldKeys !== null
      ? (mark === undefined ? [] : [[mark, `${at}.${scan.field ?? ''}`]])
      : Object.keys(entry).map((k) => [k, `${at}.${k}`])
    for (const [value, param] of marks) {
      const feature = scan.features.get(value)
      if (feature !== undefined) {
        record(found, feature, param, entryUses(feature, entry, param, body, false))
      } else if (scan.plain !== null && !(typeof value === 'string' && scan.plain.has(value))) {
        throw gatewayError('MODEL_PARAMETER_UNSUPPORTED', { param, detail: `"${param}" ${shown(value)} is not a tool the gateway can price, so it is refused.` })
      }
    }
  }
}

/**
 * The features a request uses, from its body and query string; throws the refusals that do not
 * depend on the model (unknown list entries, query values, malformed caps). Pure; an operation
 * that declares nothing returns at once.
 */
export function detectFeatures (op: OperationFeatures, body: ParsedBody | undefined, query: string): readonly FeatureUse[] {
  if (!op.any) return NONE
  const found = new Map<string, { feature: CompiledFeature, param: string, uses: number }>()
  if (op.query.size > 0 || op.queries.length > 0) {
    for (const [name, value] of queryPairs(query)) {
      const allowed = op.query.get(name)
      if (allowed !== undefined && !allowed.has(value)) {
        throw gatewayError('MODEL_PARAMETER_UNSUPPORTED', { param: name, detail: `Query parameter "${name}" ${shown(value)} would make the answer one the gateway cannot meter.` })
      }
      for (let i = 0; i < op.queries.length; i++) {
        const q = op.queries[i] as typeof op.queries[number]
        if (q.name === name && (q.values === null || q.values.has(value))) record(found, q.feature, name, q.feature.uses?.default ?? 1)
      }
    }
  }
  if (body !== undefined) {
    const multipart = body.kind === 'multipart'
    for (let i = 0; i < op.lists.length; i++) scanList(op.lists[i] as ListScan, body, found)
    for (let i = 0; i < op.params.length; i++) {
      const p = op.params[i] as typeof op.params[number]
      const v = paramValue(body, p.path)
      if (v === undefined || v === null) continue
      if (p.values !== null && !p.values.has(v as MatchValue)) continue
      const u = p.feature.uses
      const uses = u === null ? 1 : (u.param === null ? undefined : usesCap(paramValue(body, u.param), u.param.name, multipart)) ?? u.default
      record(found, p.feature, p.path.name, uses)
    }
    // A file stored at the provider, named by its id: the operator's one provider account holds
    // every account's files (and the operator's own), and the gateway does not know whose an id is.
    if (op.fileReferences !== null && body.kind === 'json') {
      const at = fileReferencePaths(body.json)[0]
      if (at !== undefined) record(found, op.fileReferences, at, 1)
    }
  }
  return found.size === 0 ? NONE : Object.freeze([...found.values()].map((f) => Object.freeze(f)))
}

/** How a model treats one feature: its price entry, or the operation's default. */
export type FeatureStance = 'priced' | 'allowed' | 'refused'

/** What a model says of its features: `stance(name)` (undefined: it does not name it). */
export interface ModelFeatures {
  readonly contextWindow: number | undefined
  stance (name: string): FeatureStance | undefined
}

/** Whether a used feature makes the provider read input the gateway cannot count. */
export const readsUncountedInput = (use: FeatureUse): boolean => use.feature.input !== 'countable'

/**
 * The refusal a model earns for the features a request uses, or null: a feature it refuses,
 * or does not price where its operation has no `allowed` default; a feature whose input the
 * gateway cannot count on a model without a context window to bound it.
 */
export function modelFeatureRefusal (uses: readonly FeatureUse[], model: ModelFeatures): Error | null {
  for (const use of uses) {
    const { feature, param } = use
    const stance = model.stance(feature.name) ?? feature.fallback ?? 'refused'
    const ok = stance === 'priced' || (stance === 'allowed' && feature.charge === 'tokens')
    if (!ok) {
      return gatewayError('MODEL_PARAMETER_UNSUPPORTED', { param, detail: `"${param}" uses ${feature.name}, which this model does not offer at a price, so it is refused.` })
    }
    if (readsUncountedInput(use) && model.contextWindow === undefined) {
      return gatewayError('MODEL_PARAMETER_UNSUPPORTED', { param, detail: `"${param}" makes the provider read input the gateway cannot count, and this model declares no context window to bound it.` })
    }
  }
  return null
}
