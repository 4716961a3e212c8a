// A model's prices compiled to exact integers (plugins/foundation/pricing/compile.ts makes them from the
// decimal strings of gateway.yaml): plain data the host, the meter and the wallet read.
import type { PriceConfig } from '../config/types.js'

export type PriceUnit = PriceConfig['unit']

/** Exact rate: numerator nano-units per `per` billed units. */
export interface Rate {
  numerator: bigint
  per: bigint
}

export interface CompiledPrice {
  unit: PriceUnit
  /** Per input token; token lists always, image lists optionally. */
  input?: Rate
  /** Per output token; token lists always, image lists optionally. */
  output?: Rate
  /** Per cached input token; falls back to `input` when absent. */
  cachedInput?: Rate
  /** Per input token written to the prompt cache (5-minute lifetime); falls back to `input`. */
  cacheWrite?: Rate
  /** Per input token written with a 1-hour lifetime; falls back to `cacheWrite`, then `input`. */
  cacheWrite1h?: Rate
  /**
   * Per image by quality and size (`image_prices`), replacing `unitPrice` for an image the
   * usage names (`imageTier`); `auto` / absent values resolve to the dearest (worst-case.ts).
   */
  imagePrices?: ImagePrices
  /** Per image / second of audio / character / call / job. */
  unitPrice?: Rate
  /**
   * Nano-units held per media item the request sends by URL (one item, not per `per`). It only
   * raises the worst-case hold: the charge is the input tokens the upstream reports for it.
   */
  urlMediaItem?: bigint
  /** The operation features this list prices, allows or refuses, by feature name. */
  features?: ReadonlyMap<string, CompiledFeaturePrice>
}

/** A per-image price table: nano-units per image by quality, then size; the defaults the provider applies. */
export interface ImagePrices {
  readonly byQuality: ReadonlyMap<string, ReadonlyMap<string, bigint>>
  /** The body parameters that choose them (`quality`, `size`). */
  readonly qualityParam: string
  readonly sizeParam: string
  /** What the provider renders when the body names none (`auto`: its choice, held at the dearest). */
  readonly defaultQuality: string
  readonly defaultSize: string
}

/**
 * One feature of a price list: nano-units per call or per use; a factor on every token price in
 * nano-units (1.7 → 1_700_000_000, so the exact factor is factor / NANOS_PER_UNIT); allowed
 * (billed as the tokens it makes the provider read); refused.
 */
export type CompiledFeaturePrice =
  | { readonly charge: 'per_call' | 'per_use', readonly amount: bigint }
  | { readonly charge: 'multiplier', readonly factor: bigint }
  | { readonly charge: 'allowed' | 'refused' }
