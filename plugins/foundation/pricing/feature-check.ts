// Whether a model decides every feature its operations declare (operations.<name>.features): a
// price of the kind the provider charges it, `allowed` (billed as tokens only) or `refused`. A
// feature neither priced nor refused, where its operation leaves the choice to the model (no
// `default`), fails `check`: that is an operation whose declared features are unpriced. A name
// no operation of the model declares is a typo, refused too. Pure and tolerant of a config that
// failed the schema.
import type { ModelConfig } from '../config/types.js'
import type { PathProblem } from '../config/problem.js'

const isRecord = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v)

interface Declared { charge: string, fallback: unknown, operation: string }

/**
 * The features the model's operations declare, by name (the first declaration of a name wins),
 * and the problems of a name two of its operations charge differently: the model prices a
 * feature by name, once for all its operations.
 */
function declaredFeatures (model: ModelConfig, table: Record<string, unknown>, out: PathProblem[]): Map<string, Declared> {
  const declared = new Map<string, Declared>()
  for (const operation of Object.keys(isRecord(model.operations) ? model.operations : {})) {
    const entry = table[operation]
    const features = isRecord(entry) && isRecord(entry.features) ? entry.features : {}
    for (const [name, f] of Object.entries(features)) {
      if (!isRecord(f) || typeof f.charge !== 'string') continue
      const prior = declared.get(name)
      if (prior === undefined) declared.set(name, { charge: f.charge, fallback: f.default, operation })
      else if (prior.charge !== f.charge) {
        out.push({ path: ['operations', operation], at: 'key', message: `feature "${name}" is charged ${f.charge} here but ${prior.charge} in operation ${prior.operation}: this model prices it once, by name` })
      }
    }
  }
  return declared
}

function entryProblem (name: string, entry: unknown, declared: Declared): string | null {
  const { charge, operation } = declared
  if (entry === 'refused') return null
  if (entry === 'allowed') {
    return charge === 'tokens' ? null : `feature "${name}" of operation ${operation} is charged ${charge} by the provider: give its ${charge} price, or refused`
  }
  if (!isRecord(entry)) return null // the schema's to report
  const kind = Object.keys(entry)[0]
  if (charge === 'tokens') return `feature "${name}" of operation ${operation} is billed as tokens: write allowed or refused, not a ${String(kind)} price`
  if (kind !== charge) return `feature "${name}" of operation ${operation} is charged ${charge} by the provider, not ${String(kind)}`
  return null
}

/** What keeps the model's features from being decided, with paths inside the model. */
export function featurePriceProblems (model: ModelConfig, table: Record<string, unknown>): PathProblem[] {
  if (!isRecord(model.pricing)) return []
  const out: PathProblem[] = []
  const declared = declaredFeatures(model, table, out)
  const priced = isRecord(model.pricing.features) ? model.pricing.features : {}
  for (const [name, entry] of Object.entries(priced)) {
    const d = declared.get(name)
    if (d === undefined) {
      const ops = Object.keys(isRecord(model.operations) ? model.operations : {}).join(', ')
      out.push({ path: ['pricing', 'features', name], at: 'key', message: `feature "${name}" is not declared by any operation this model serves (${ops})` })
      continue
    }
    const problem = entryProblem(name, entry, d)
    if (problem !== null) out.push({ path: ['pricing', 'features', name], message: problem })
  }
  for (const [name, d] of declared) {
    if (d.fallback === undefined && !Object.hasOwn(priced, name)) {
      out.push({ path: ['pricing'], message: `feature "${name}" of operation ${d.operation} is neither priced nor refused: add pricing.features.${name}` })
    }
  }
  return out
}
