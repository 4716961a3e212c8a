// Model aliases (`model_aliases:`): the bare names SDKs and frameworks send (`gpt-4o-mini`,
// `claude-sonnet-4`, `gemini-2.5-flash`) resolved to a catalogue id, per family, before anything
// else reads the model. Compiled into the plan's model table; checked by `check` (cross-check).
import type { PathProblem } from '../config/problem.js'
import type { GatewayConfig, ModelAliasConfig } from '../config/types.js'

/** family → alias → catalogue id. */
export type AliasTable = ReadonlyMap<string, ReadonlyMap<string, string>>

const isString = (value: unknown): value is string => typeof value === 'string'
const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object'
const listOf = (value: unknown): readonly unknown[] => Array.isArray(value) ? value : []

/**
 * The families an alias applies to: its own `families`, else every family with a route that
 * serves one of its model's operations (where a request could name the model at all).
 */
function familiesOf (config: Pick<GatewayConfig, 'routes' | 'models'>, entry: Partial<ModelAliasConfig>): string[] {
  if (Array.isArray(entry.families)) return entry.families.filter(isString)
  const model = listOf(config.models).find((m) => isObject(m) && m.id === entry.model) as { operations?: unknown } | undefined
  const served = new Set(Object.keys(isObject(model?.operations) ? model.operations : {}))
  const families = new Set<string>()
  for (const route of listOf(config.routes)) {
    if (isObject(route) && isString(route.family) && isString(route.operation) && served.has(route.operation)) families.add(route.family)
  }
  return [...families]
}

/** Pure: the config's aliases, per family (a config that passed check has no collision). */
export function compileAliases (config: Pick<GatewayConfig, 'routes' | 'models' | 'model_aliases'>): AliasTable {
  const table = new Map<string, Map<string, string>>()
  for (const entry of config.model_aliases ?? []) {
    for (const family of familiesOf(config, entry)) {
      let names = table.get(family)
      if (names === undefined) table.set(family, names = new Map())
      names.set(entry.alias, entry.model)
    }
  }
  return table
}

/**
 * What check refuses: an alias that is a catalogue id (the id would mean two models), one that
 * another alias already claims in one of its families, one that names a model the catalogue
 * does not hold, or a family that is not defined. Tolerant of a config that failed the schema.
 */
export function checkAliases (config: GatewayConfig): PathProblem[] {
  const out: PathProblem[] = []
  const ids = new Map<string, number>()
  listOf(config.models).forEach((m, i) => { if (isObject(m) && isString(m.id) && !ids.has(m.id)) ids.set(m.id, i) })
  const families = isObject(config.families) ? config.families : {}
  const claimed = new Map<string, number>()
  listOf(config.model_aliases).forEach((entry, i) => {
    if (!isObject(entry) || !isString(entry.alias)) return
    const alias = entry.alias
    const at = ['model_aliases', i]
    const asId = ids.get(alias)
    if (asId !== undefined) out.push({ path: [...at, 'alias'], message: `alias "${alias}" collides with the catalogue id of models[${asId}]` })
    if (isString(entry.model) && !ids.has(entry.model)) out.push({ path: [...at, 'model'], message: `model "${entry.model}" is not a model in the catalogue` })
    listOf(entry.families).forEach((family, j) => {
      if (isString(family) && !Object.prototype.hasOwnProperty.call(families, family)) out.push({ path: [...at, 'families', j], message: `family "${family}" is not defined in families` })
    })
    for (const family of familiesOf(config, entry as Partial<ModelAliasConfig>)) {
      const first = claimed.get(`${family} ${alias}`)
      if (first === undefined) {
        claimed.set(`${family} ${alias}`, i)
      } else {
        out.push({ path: [...at, 'alias'], message: `alias "${alias}" collides with model_aliases[${first}] in family ${family}` })
        break
      }
    }
  })
  return out
}
