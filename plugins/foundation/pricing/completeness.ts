// Whether a model is priced completely enough to serve: its price list has every price its unit
// needs and compiles to exact rates, every operation it serves has a meter that bills, and every
// feature those operations declare is priced or refused (feature-check.ts). One
// definition for the three places that ask: `check` demands it of every model but a draft, the
// catalogue leaves a draft without it out, and publishing a draft (admin API) is refused
// without it (MODEL_PUBLISH_PRICING_REQUIRED). Pure and tolerant of a config that failed the
// schema (the loader still runs the check then, to report every problem at once).
import type { GatewayConfig, ModelConfig } from '../config/types.js'
import type { PathProblem } from '../config/problem.js'
import { compilePrice, PriceConfigError } from './compile.js'
import { featurePriceProblems } from './feature-check.js'

const isRecord = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v)

/** Meter kinds under which a request bills nothing itself. */
const FREE_METERS: ReadonlySet<unknown> = new Set(['none', 'job_poll'])

/**
 * Every model but a draft is completely priced against `operations` (operationsTable): a draft
 * may be priced incompletely, as it is not published, and publishing it checks the same.
 */
export function checkPricing (config: GatewayConfig, operations: Record<string, unknown>): PathProblem[] {
  const out: PathProblem[] = []
  const models: readonly unknown[] = Array.isArray(config.models) ? config.models : []
  models.forEach((model, i) => {
    if (model === null || typeof model !== 'object' || (model as ModelConfig).status === 'draft') return
    for (const p of pricingProblems(model as ModelConfig, operations)) out.push({ ...p, path: ['models', i, ...p.path] })
  })
  return out
}

/**
 * What keeps `model` from being completely priced, each problem with its path inside the model
 * (`pricing`, `pricing.<field>`, `operations.<name>`); empty when it is complete.
 */
export function pricingProblems (model: ModelConfig, operations: Record<string, unknown>): PathProblem[] {
  return [...priceListProblems(model), ...unbilledOperations(model, operations), ...featurePriceProblems(model, operations)]
}

function priceListProblems (model: ModelConfig): PathProblem[] {
  const pricing: unknown = model.pricing
  if (!isRecord(pricing)) return []
  const p = model.pricing
  const needed = p.unit === 'token' ? ['input', 'output', 'per'] as const : ['unit_price'] as const
  // A per-image table by quality and size stands in for unit_price.
  const missing = needed.filter((k) => p[k] === undefined && !(k === 'unit_price' && p.unit === 'image' && p.image_prices !== undefined))
  if (missing.length > 0) return [{ path: ['pricing'], message: `${p.unit} pricing needs ${missing.join(', ')}` }]
  // The loader compiles prices to exact integer rates at boot; whatever it refuses is reported here.
  try {
    compilePrice(p, 'pricing')
    return []
  } catch (err) {
    if (!(err instanceof PriceConfigError)) throw err
    return [{ path: err.field ? ['pricing', err.field] : ['pricing'], message: err.reason }]
  }
}

function unbilledOperations (model: ModelConfig, table: Record<string, unknown>): PathProblem[] {
  const out: PathProblem[] = []
  if (!isRecord(model.operations) || !isRecord(model.pricing)) return out
  for (const name of Object.keys(model.operations)) {
    const entry = table[name]
    const meter = isRecord(entry) && isRecord(entry.meter) ? entry.meter.kind : undefined
    if (meter === undefined) {
      out.push({ path: ['operations', name], at: 'key', message: `operation "${name}" has no meter: declare it under operations, or the priced model would serve it free` })
    } else if (FREE_METERS.has(meter)) {
      out.push({ path: ['operations', name], at: 'key', message: `operation "${name}" is metered ${String(meter)}, which bills nothing: the priced model would serve it free` })
    }
  }
  return out
}
