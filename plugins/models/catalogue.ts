import type { GatewayConfig, ModelConfig, ModelStatus, PriceConfig } from '../config/types.js'
import { gatewayError } from '../errors/index.js'
import { compilePrice, type CompiledPrice } from '../pricing/compile.js'
import { MAX_IMAGES } from '../pricing/worst-case.js'
import type { BodyRules } from '../request/body-rules.js'

export interface CompiledModel {
  readonly id: string
  readonly status: ModelStatus
  readonly pool: string
  readonly upstreamModel: string
  /** operation → upstream path template */
  readonly operations: ReadonlyMap<string, string>
  /** operation → edits of the JSON body the provider needs for this model (only operations that declare some) */
  readonly bodyRules: ReadonlyMap<string, BodyRules>
  readonly capabilities: ReadonlySet<string>
  readonly fallbacks: readonly string[]
  readonly pricing: PriceConfig
  /** Exact integer rates compiled from the decimal prices at boot. */
  readonly price: CompiledPrice
  readonly maxOutputTokens: number | undefined
  /** Most images one request may ask for: `max_images`, else MAX_IMAGES. */
  readonly maxImages: number
  readonly requiresTopup: boolean
  readonly config: ModelConfig
}

export interface ModelCatalogue {
  get (id: string): CompiledModel | undefined
  list (): readonly CompiledModel[]
  /** The model a request may be served by, or the catalogue error why not. */
  resolve (id: string, operation: string): CompiledModel
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

export function compileModels (config: GatewayConfig): ModelCatalogue {
  const byId = new Map<string, CompiledModel>()
  config.models.forEach((m, i) => {
    byId.set(m.id, Object.freeze({
      id: m.id,
      status: m.status,
      pool: m.pool,
      upstreamModel: m.upstream_model,
      operations: new Map(Object.entries(m.operations).map(([op, o]) => [op, o.path])),
      bodyRules: compileBodyRules(m),
      capabilities: new Set(m.capabilities ?? []),
      fallbacks: Object.freeze([...(m.fallbacks ?? [])]),
      pricing: m.pricing,
      price: compilePrice(m.pricing, `models[${i}].pricing`),
      maxOutputTokens: m.max_output_tokens,
      maxImages: m.max_images ?? MAX_IMAGES,
      requiresTopup: m.requires_topup === true,
      config: m
    }))
  })
  const all = Object.freeze([...byId.values()])
  return {
    get: (id) => byId.get(id),
    list: () => all,
    resolve (id, operation) {
      const model = byId.get(id)
      if (!model) throw gatewayError('MODEL_NOT_FOUND', { param: 'model' })
      if (model.status === 'retired') throw gatewayError('MODEL_RETIRED', { param: 'model' })
      if (model.status === 'paused') throw gatewayError('MODEL_TEMPORARILY_UNAVAILABLE', { param: 'model' })
      if (!model.operations.has(operation)) throw gatewayError('MODEL_PROTOCOL_UNSUPPORTED', { param: 'model' })
      return model
    }
  }
}
