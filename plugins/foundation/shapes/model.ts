// A model of the catalogue as compiled from gateway.yaml (plugins/concerns/models/catalogue.ts makes it):
// plain data the host carries in a request's context and every concern reads.
import type { ModelConfig, ModelStatus, PriceConfig } from '../config/types.js'
import type { BodyRules } from './body.js'
import type { CompiledPrice } from './price.js'

export interface CompiledModel {
  readonly id: string
  /** The status gateway.yaml declares; what a request meets is the catalogue's `statusOf`. */
  readonly status: ModelStatus
  readonly pool: string
  readonly upstreamModel: string
  /** operation → upstream path template */
  readonly operations: ReadonlyMap<string, string>
  /** operation → edits of the JSON body the provider needs for this model (only operations that declare some) */
  readonly bodyRules: ReadonlyMap<string, BodyRules>
  /** operation → what its provider reports differently from the operation's dialect (only operations that declare a `meter`) */
  readonly meters: ReadonlyMap<string, ModelMeter>
  readonly capabilities: ReadonlySet<string>
  readonly fallbacks: readonly string[]
  readonly pricing: PriceConfig
  /** Exact integer rates compiled from the decimal prices at boot. */
  readonly price: CompiledPrice
  readonly maxOutputTokens: number | undefined
  /** Context window in tokens (`context_window`): what input the body does not bound is held at. */
  readonly contextWindow: number | undefined
  /** Most images one request may ask for: `max_images`, else MAX_IMAGES. */
  readonly maxImages: number
  readonly requiresTopup: boolean
  readonly config: ModelConfig
}

/** Dotted paths (split) inside a usage object whose values, summed, are one count. */
export type UsagePath = readonly (readonly string[])[]

/** Where a provider's usage object holds each count (`meter.usage`); an absent count is read as the dialect reads it. */
export interface UsagePaths {
  readonly inputTokens?: UsagePath
  readonly outputTokens?: UsagePath
  readonly cachedInputTokens?: UsagePath
}

/** A model operation's `meter`: the provider's usage fields and its stream rule, compiled once. */
export interface ModelMeter {
  /** The provider puts usage in every stream: the gateway asks for no usage chunk. */
  readonly streamUsageAlways: boolean
  readonly usage: UsagePaths | null
}
