import type { GatewayConfig, ModelConfig, ModelStatus } from '../../foundation/config/types.js'
import { gatewayError } from '../../foundation/errors/index.js'
import { compilePrice } from '../../foundation/pricing/compile.js'
import { pricingProblems } from '../../foundation/pricing/completeness.js'
import { MAX_IMAGES } from '../../foundation/pricing/worst-case.js'
import type { BodyRules, CompiledModel, ModelMeter, UsagePath, UsagePaths } from '../../foundation/shapes/index.js'
import { compileAliases } from './aliases.js'
import { operationsTable } from '../../foundation/operations/index.js'

/** The compiled models of one config (part of its plan): immutable, no status but the configured one. */
export interface ModelTable {
  /** A completely priced model, whatever its status; a draft priced incompletely is in no catalogue. */
  get (id: string): CompiledModel | undefined
  list (): readonly CompiledModel[]
  /**
   * The catalogue id a request of `family` means by `id`: the model an alias of that family
   * stands for (`model_aliases`), else `id` itself.
   */
  canonicalId (family: string, id: string): string
}

/** The models as requests meet them: the plan's table with the admin API's stored statuses over it. */
export interface ModelCatalogue extends ModelTable {
  /**
   * The status a request meets: the admin API's stored one when there is one, else the configured
   * one; undefined for a model the catalogue does not hold.
   */
  statusOf (id: string): ModelStatus | undefined
  /** The model a request may be served by, or the catalogue error why not. */
  resolve (id: string, operation: string): CompiledModel
  /**
   * Replaces the stored statuses (the admin API's, read from the shared database by the models
   * concern's cache) that `statusOf` and `resolve` answer with; a model without one keeps its
   * configured status.
   */
  setStoredStatuses (stored: ReadonlyMap<string, { readonly status: ModelStatus }>): void
}

function compileBodyRules (m: ModelConfig): ReadonlyMap<string, BodyRules> {
  const rules = new Map<string, BodyRules>()
  for (const [op, o] of Object.entries(m.operations)) {
    const dropFields = new Set(o.drop_fields ?? [])
    const maxOutputTokens = o.cap_output_tokens === true ? m.max_output_tokens : undefined
    if (dropFields.size > 0 || maxOutputTokens !== undefined) rules.set(op, Object.freeze({ dropFields, maxOutputTokens }))
  }
  return rules
}

function compileMeters (m: ModelConfig): ReadonlyMap<string, ModelMeter> {
  const meters = new Map<string, ModelMeter>()
  const split = (paths: readonly string[] | undefined): UsagePath | undefined =>
    paths === undefined ? undefined : Object.freeze(paths.map((p) => Object.freeze(p.split('.'))))
  for (const [op, o] of Object.entries(m.operations)) {
    const meter = o.meter
    if (meter === undefined) continue
    const u = meter.usage
    const usage: UsagePaths | null = u === undefined
      ? null
      : Object.freeze({
        ...(u.input_tokens === undefined ? {} : { inputTokens: split(u.input_tokens) }),
        ...(u.output_tokens === undefined ? {} : { outputTokens: split(u.output_tokens) }),
        ...(u.cached_input_tokens === undefined ? {} : { cachedInputTokens: split(u.cached_input_tokens) })
      })
    meters.set(op, Object.freeze({ streamUsageAlways: meter.stream_usage === 'always', usage }))
  }
  return meters
}

/**
 * The status a request meets: the stored one (admin API) when there is one, else the configured
 * one. A model priced incompletely (only a draft can be) stays a draft whatever was stored: it
 * cannot be published.
 */
export function effectiveStatus (configured: ModelStatus, stored: ModelStatus | undefined, completelyPriced: boolean): ModelStatus {
  if (!completelyPriced) return 'draft'
  return stored ?? configured
}

/**
 * Pure: the table of every completely priced model (pricing/completeness.ts): a draft priced
 * incompletely cannot be published, so no request can ever reach it and it is left out.
 */
export function compileModelTable (config: GatewayConfig): ModelTable {
  const byId = new Map<string, CompiledModel>()
  const operations = operationsTable(config)
  config.models.forEach((m, i) => {
    if (m.status === 'draft' && pricingProblems(m, operations).length > 0) return
    byId.set(m.id, Object.freeze({
      id: m.id,
      status: m.status,
      pool: m.pool,
      upstreamModel: m.upstream_model,
      operations: new Map(Object.entries(m.operations).map(([op, o]) => [op, o.path])),
      bodyRules: compileBodyRules(m),
      meters: compileMeters(m),
      capabilities: new Set(m.capabilities ?? []),
      fallbacks: Object.freeze([...(m.fallbacks ?? [])]),
      pricing: m.pricing,
      price: compilePrice(m.pricing, `models[${i}].pricing`),
      maxOutputTokens: m.max_output_tokens,
      contextWindow: m.context_window,
      maxImages: m.max_images ?? MAX_IMAGES,
      requiresTopup: m.requires_topup === true,
      config: m
    }))
  })
  const all = Object.freeze([...byId.values()])
  const aliases = compileAliases(config)
  return Object.freeze({
    get: (id: string) => byId.get(id),
    list: () => all,
    canonicalId: (family: string, id: string) => aliases.get(family)?.get(id) ?? id
  })
}

/**
 * The catalogue requests meet, over a plan's table: one per gateway (config generation); its
 * stored statuses are the models concern's to refresh (setStoredStatuses).
 */
export function modelCatalogue (table: ModelTable): ModelCatalogue {
  let stored: ReadonlyMap<string, { readonly status: ModelStatus }> = new Map()
  const statusOf = (model: CompiledModel): ModelStatus => effectiveStatus(model.status, stored.get(model.id)?.status, true)
  return {
    get: table.get,
    list: table.list,
    canonicalId: table.canonicalId,
    statusOf (id) {
      const model = table.get(id)
      return model === undefined ? undefined : statusOf(model)
    },
    resolve (id, operation) {
      const model = table.get(id)
      const status = model === undefined ? 'draft' : statusOf(model)
      // A draft is not in the published catalogue: the same answer as an id never declared.
      if (model === undefined || status === 'draft') throw gatewayError('MODEL_NOT_FOUND', { param: 'model' })
      if (status === 'retired') throw gatewayError('MODEL_RETIRED', { param: 'model' })
      if (status === 'paused') throw gatewayError('MODEL_TEMPORARILY_UNAVAILABLE', { param: 'model' })
      if (!model.operations.has(operation)) throw gatewayError('MODEL_PROTOCOL_UNSUPPORTED', { param: 'model' })
      return model
    },
    setStoredStatuses (next) { stored = next }
  }
}

/** The table and a catalogue over it in one call (tools and tests; the gateway reads its plan's table). */
export function compileModels (config: GatewayConfig): ModelCatalogue {
  return modelCatalogue(compileModelTable(config))
}
