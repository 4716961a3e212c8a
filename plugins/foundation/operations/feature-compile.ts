// The features of an operation (config `operations.<name>.features`, `tool_lists`, `query`),
// compiled once into what a request is checked against: per body list, one map from an entry's
// type (or key) to the feature it marks, so a request walks each list once whatever the number
// of features; per parameter and query name, the feature and values that mark it.
import type { FeatureCharge, FeatureConfig, FeatureInput, MatchValue, OperationConfig } from '../config/types.js'
import type { ParamPath } from '../shapes/index.js'

/** Where the provider's answer says how much a feature was used. */
export type FeatureReport =
  | { readonly kind: 'usage', readonly path: readonly string[] }
  | { readonly kind: 'output_items', readonly types: ReadonlySet<string> }
  | { readonly kind: 'candidates_with', readonly field: string }
  | { readonly kind: 'answer_value', readonly path: readonly string[], readonly values: ReadonlySet<MatchValue> }

export interface CompiledFeature {
  readonly name: string
  readonly charge: FeatureCharge
  /** What the hold counts as uses: the param or the matched entry's field, else `default`. */
  readonly uses: { readonly param: ParamPath | null, readonly itemField: string | null, readonly default: number } | null
  readonly input: FeatureInput
  readonly report: FeatureReport | null
  /** The operation's stance for a model that does not name the feature (null: every model must). */
  readonly fallback: 'refused' | 'allowed' | null
}

/** One body list examined entry by entry. */
export interface ListScan {
  readonly list: ParamPath
  /** The entry field whose value marks a feature (a dotted path into the entry); null: the entry's keys do. */
  readonly field: string | null
  /** `field` split at its dots. */
  readonly fieldKeys: readonly string[] | null
  /** Values (or keys) billed as tokens only; null: the list is open (unknown entries pass). */
  readonly plain: ReadonlySet<string> | null
  /** Entry value (or key) → the feature it marks. */
  readonly features: ReadonlyMap<MatchValue, CompiledFeature>
}

/** A body parameter that marks a feature, when present (and, with values, equal to one of them). */
export interface ParamScan {
  readonly path: ParamPath
  readonly values: ReadonlySet<MatchValue> | null
  readonly feature: CompiledFeature
}

/** A query parameter that marks a feature. */
export interface QueryScan {
  readonly name: string
  readonly values: ReadonlySet<string> | null
  readonly feature: CompiledFeature
}

export interface OperationFeatures {
  /** Every declared feature, by name. */
  readonly byName: ReadonlyMap<string, CompiledFeature>
  readonly lists: readonly ListScan[]
  readonly params: readonly ParamScan[]
  readonly queries: readonly QueryScan[]
  /** The feature a file stored at the provider named by its id marks (`match: { file_references: true }`), or null. */
  readonly fileReferences: CompiledFeature | null
  /** Query parameter → the only values forwarded (a parameter not here is not forwarded). */
  readonly query: ReadonlyMap<string, ReadonlySet<string>>
  /** False when there is nothing to look at: the request pays no walk at all. */
  readonly any: boolean
}

export const pathOf = (name: string): ParamPath => Object.freeze({ name, keys: Object.freeze(name.split('.')) })

function reportOf (f: FeatureConfig): FeatureReport | null {
  const r = f.report
  if (r === undefined) return null
  if (r.usage !== undefined) return Object.freeze({ kind: 'usage', path: Object.freeze(r.usage.split('.')) })
  if (r.output_items !== undefined) return Object.freeze({ kind: 'output_items', types: new Set(r.output_items) })
  if (r.candidates_with !== undefined) return Object.freeze({ kind: 'candidates_with', field: r.candidates_with })
  if (r.answer_value !== undefined) return Object.freeze({ kind: 'answer_value', path: Object.freeze(r.answer_value.field.split('.')), values: new Set(r.answer_value.values) })
  return null
}

function compileFeature (name: string, f: FeatureConfig): CompiledFeature {
  const u = f.uses
  return Object.freeze({
    name,
    charge: f.charge,
    uses: u === undefined ? null : Object.freeze({ param: u.param === undefined ? null : pathOf(u.param), itemField: u.item_field ?? null, default: u.default }),
    input: f.input ?? 'countable',
    report: reportOf(f),
    fallback: f.default ?? null
  })
}

interface MutableList { list: ParamPath, field: string | null, fieldKeys: readonly string[] | null, plain: Set<string> | null, features: Map<MatchValue, CompiledFeature> }

/**
 * Compiles one operation's features. A config that passed `check` is assumed (checkFeatures in
 * check.ts reports a malformed match); a match of no known form is skipped here.
 */
export function compileOperationFeatures (entry: Pick<OperationConfig, 'features' | 'tool_lists' | 'query'>): OperationFeatures {
  const byName = new Map<string, CompiledFeature>()
  const lists = new Map<string, MutableList>()
  const listOf = (list: string, field: string | null): MutableList => {
    const key = `${list}\u0000${field ?? ''}`
    let scan = lists.get(key)
    if (scan === undefined) lists.set(key, scan = { list: pathOf(list), field, fieldKeys: field === null ? null : Object.freeze(field.split('.')), plain: null, features: new Map() })
    return scan
  }
  const params: ParamScan[] = []
  const queries: QueryScan[] = []
  let fileReferences: CompiledFeature | null = null
  for (const [name, f] of Object.entries(entry.features ?? {})) {
    const feature = compileFeature(name, f)
    byName.set(name, feature)
    const m = f.match
    if (m.list !== undefined && m.field !== undefined) {
      const scan = listOf(m.list, m.field)
      for (const v of m.values ?? []) scan.features.set(v, feature)
    } else if (m.list !== undefined && m.keys !== undefined) {
      const scan = listOf(m.list, null)
      for (const k of m.keys) scan.features.set(k, feature)
    } else if (m.param !== undefined) {
      for (const p of m.param) params.push(Object.freeze({ path: pathOf(p), values: m.values === undefined ? null : new Set(m.values), feature }))
    } else if (m.file_references === true) {
      fileReferences = feature
    } else if (m.query !== undefined) {
      queries.push(Object.freeze({ name: m.query, values: m.values === undefined ? null : new Set(m.values.map(String)), feature }))
    }
  }
  for (const t of entry.tool_lists ?? []) {
    const scan = listOf(t.list, t.field ?? null)
    scan.plain = new Set([...(scan.plain ?? []), ...t.plain])
  }
  const query = new Map(Object.entries(entry.query ?? {}).map(([name, values]) => [name, new Set(values)] as const))
  const frozenLists = [...lists.values()].map((l) => Object.freeze({ ...l }))
  return Object.freeze({
    byName,
    lists: Object.freeze(frozenLists),
    params: Object.freeze(params),
    queries: Object.freeze(queries),
    fileReferences,
    query,
    any: byName.size > 0 || frozenLists.length > 0 || query.size > 0
  })
}
