// Model aliases (`families.<name>.aliases`): the bare names SDKs and frameworks send
// (`gpt-4o-mini`, `claude-sonnet-4`, `gemini-2.5-flash`) resolved to a catalogue id, per family,
// before anything else reads the model. Compiled into the plan's model table; checked by `check`.
import { isObject, isString, listOf, type PathProblem } from '../../foundation/config/problem.js'
import type { GatewayConfig } from '../../foundation/config/types.js'

/** family → alias → catalogue id. */
export type AliasTable = ReadonlyMap<string, ReadonlyMap<string, string>>

/** Pure: each family's aliases (a config that passed check has no collision). */
export function compileAliases (config: Pick<GatewayConfig, 'families'>): AliasTable {
  const table = new Map<string, ReadonlyMap<string, string>>()
  for (const [family, f] of Object.entries(config.families)) {
    const aliases = f.aliases ?? []
    if (aliases.length > 0) table.set(family, new Map(aliases.map((a) => [a.alias, a.model])))
  }
  return table
}

/**
 * What check refuses: an alias that is a catalogue id (the id would mean two models), one that
 * another alias of the family already claims, or one that names a model the catalogue does not
 * hold. Tolerant of a config that failed the schema.
 */
export function checkAliases (config: GatewayConfig): PathProblem[] {
  const out: PathProblem[] = []
  const ids = new Map<string, number>()
  listOf(config.models).forEach((m, i) => { if (isObject(m) && isString(m.id) && !ids.has(m.id)) ids.set(m.id, i) })
  for (const [family, f] of Object.entries(isObject(config.families) ? config.families : {})) {
    const claimed = new Map<string, number>()
    listOf(isObject(f) ? f.aliases : undefined).forEach((entry, i) => {
      if (!isObject(entry)) return
      const at = ['families', family, 'aliases', i]
      if (isString(entry.alias)) {
        const asId = ids.get(entry.alias)
        const first = claimed.get(entry.alias)
        if (asId !== undefined) out.push({ path: [...at, 'alias'], message: `alias "${entry.alias}" collides with the catalogue id of models[${asId}]` })
        else if (first !== undefined) out.push({ path: [...at, 'alias'], message: `alias "${entry.alias}" collides with families.${family}.aliases[${first}]` })
        else claimed.set(entry.alias, i)
      }
      if (isString(entry.model) && !ids.has(entry.model)) out.push({ path: [...at, 'model'], message: `model "${entry.model}" is not a model in the catalogue` })
    })
  }
  return out
}
