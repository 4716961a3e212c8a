// Turns a model's `pricing` block (decimal strings) into exact integer rates at boot.
//
// A rate is `numerator / per` nano-units per billed unit. Every price of one list refers to the
// same `per` units (gateway.yaml: "prices are decimal strings in the account currency per `per`
// units"): `{ unit: token, input: "2.50", per: 1000000 }` is 2_500_000_000 / 1_000_000 nano-units
// per token; `{ unit: image, unit_price: "0.04" }` is 40_000_000 / 1 per image. A list that has
// token prices must state `per` (a forgotten `per` would bill per single token); lists without
// token prices default it to 1. Note that an image list carrying token prices shares that `per`
// with its unit_price.
import type { PriceConfig } from '../config/types.js'
import type { CompiledFeaturePrice, CompiledPrice, ImagePrices, PriceUnit } from '../shapes/index.js'
import { isMoneyFormatError, parseMoney } from './money.js'

const UNITS: readonly PriceUnit[] = ['token', 'image', 'audio_second', 'character', 'call', 'job']
const TOKEN_FIELDS = ['input', 'output', 'cached_input', 'cache_write', 'cache_write_1h'] as const

type MoneyField = typeof TOKEN_FIELDS[number] | 'unit_price' | 'url_media_item'

const FEATURE_CHARGES = ['per_call', 'per_use', 'multiplier'] as const

/**
 * A price list compilePrice refuses. `field` and `reason` are kept apart so `check` can point at
 * the field's line without reading them back out of the message.
 */
export class PriceConfigError extends Error {
  override readonly name = 'PriceConfigError'
  constructor (readonly where: string, readonly field: string | null, readonly reason: string) {
    super(`${where}${field ? `.${field}` : ''}: ${reason}`)
  }
}

/**
 * Validates and compiles one price list. Throws a PriceConfigError naming `where` (e.g.
 * "models[3].pricing") and the field at fault; the config loader calls this at boot.
 */
export function compilePrice (p: PriceConfig, where = 'pricing'): CompiledPrice {
  const fail = (field: string | null, message: string): never => {
    throw new PriceConfigError(where, field, message)
  }
  if (p === null || typeof p !== 'object') fail(null, 'expected an object')
  if (!UNITS.includes(p.unit)) fail('unit', `must be one of ${UNITS.join(', ')}, got ${JSON.stringify(p.unit)}`)

  const money = (field: MoneyField): bigint | undefined => {
    const raw: unknown = p[field]
    if (raw === undefined) return undefined
    if (typeof raw !== 'string') return fail(field, `must be a decimal string such as "0.04", got ${JSON.stringify(raw)}`)
    try {
      return parseMoney(raw)
    } catch (err) {
      return fail(field, isMoneyFormatError(err) ? err.message : String(err))
    }
  }
  const input = money('input')
  const output = money('output')
  const cachedInput = money('cached_input')
  const cacheWrite = money('cache_write')
  const cacheWrite1h = money('cache_write_1h')
  const unitPrice = money('unit_price')
  const urlMediaItem = money('url_media_item')
  const hasTokenPrices = input !== undefined || output !== undefined || cachedInput !== undefined || cacheWrite !== undefined || cacheWrite1h !== undefined

  let per = 1n
  if (p.per !== undefined) {
    if (typeof p.per !== 'number' || !Number.isSafeInteger(p.per) || p.per < 1) {
      fail('per', `must be a positive integer, got ${JSON.stringify(p.per)}`)
    }
    per = BigInt(p.per)
  } else if (hasTokenPrices) {
    fail('per', 'is required with token prices (e.g. per: 1000000 for prices per million tokens)')
  }

  if (p.unit === 'token') {
    if (input === undefined) fail('input', 'is required for unit token')
    if (output === undefined) fail('output', 'is required for unit token')
    if (unitPrice !== undefined) fail('unit_price', 'is not used by unit token; use input/output')
  } else {
    if (unitPrice === undefined && !(p.unit === 'image' && p.image_prices !== undefined)) fail('unit_price', `is required for unit ${p.unit}`)
    if (hasTokenPrices && p.unit !== 'image') {
      const field = TOKEN_FIELDS.find((f) => p[f] !== undefined) ?? 'input'
      fail(field, `token prices are only billed for units token and image, not ${p.unit}`)
    }
  }
  if (cachedInput !== undefined && input === undefined) fail('cached_input', 'needs an input price')
  if (cachedInput !== undefined && input !== undefined && cachedInput > input) {
    fail('cached_input', 'must not exceed input (the worst-case hold counts every input token at the input price)')
  }

  for (const [field, v] of [['cache_write', cacheWrite], ['cache_write_1h', cacheWrite1h]] as const) {
    if (v !== undefined && input === undefined) fail(field, 'needs an input price')
  }

  // Media fetched by URL is billed as input tokens: a list that bills none has nothing to hold for.
  if (urlMediaItem !== undefined && input === undefined) {
    fail('url_media_item', 'holds for input tokens of media sent by URL, so it needs an input price')
  }

  const features = p.features === undefined ? undefined : compileFeaturePrices(p.features, fail)
  if (p.image_prices !== undefined && p.unit !== 'image') fail('image_prices', 'prices images, so it needs unit image')
  const imagePrices = p.image_prices === undefined ? undefined : compileImagePrices(p.image_prices, fail)

  const out: CompiledPrice = { unit: p.unit }
  if (input !== undefined) out.input = { numerator: input, per }
  if (output !== undefined) out.output = { numerator: output, per }
  if (cachedInput !== undefined) out.cachedInput = { numerator: cachedInput, per }
  if (cacheWrite !== undefined) out.cacheWrite = { numerator: cacheWrite, per }
  if (cacheWrite1h !== undefined) out.cacheWrite1h = { numerator: cacheWrite1h, per }
  if (imagePrices !== undefined) out.imagePrices = imagePrices
  if (unitPrice !== undefined) out.unitPrice = { numerator: unitPrice, per }
  if (urlMediaItem !== undefined) out.urlMediaItem = urlMediaItem
  if (features !== undefined) out.features = features
  return out
}

function compileFeaturePrices (entries: NonNullable<PriceConfig['features']>, fail: (field: string | null, message: string) => never): ReadonlyMap<string, CompiledFeaturePrice> {
  const out = new Map<string, CompiledFeaturePrice>()
  if (entries === null || typeof entries !== 'object') fail('features', 'expected a mapping of feature names')
  for (const [name, entry] of Object.entries(entries)) {
    if (entry === 'refused' || entry === 'allowed') {
      out.set(name, Object.freeze({ charge: entry }))
      continue
    }
    const keys = entry !== null && typeof entry === 'object' ? Object.keys(entry) : []
    const charge = FEATURE_CHARGES.find((c) => keys.includes(c))
    if (charge === undefined || keys.length !== 1) fail(`features.${name}`, 'must be refused, allowed, or exactly one of per_call, per_use, multiplier')
    const raw: unknown = (entry as Record<string, unknown>)[charge as string]
    let amount: bigint
    try {
      if (typeof raw !== 'string') throw new Error(`must be a decimal string such as "0.01", got ${JSON.stringify(raw)}`)
      amount = parseMoney(raw)
    } catch (err) {
      return fail(`features.${name}.${String(charge)}`, isMoneyFormatError(err) ? err.message : (err as Error).message)
    }
    if (charge === 'multiplier') {
      if (amount === 0n) fail(`features.${name}.multiplier`, 'must be above 0')
      out.set(name, Object.freeze({ charge, factor: amount }))
    } else {
      out.set(name, Object.freeze({ charge: charge as 'per_call' | 'per_use', amount }))
    }
  }
  return out
}

function compileImagePrices (p: NonNullable<PriceConfig['image_prices']>, fail: (field: string | null, message: string) => never): ImagePrices {
  const byQuality = new Map<string, Map<string, bigint>>()
  for (const [quality, sizes] of Object.entries(p.prices)) {
    if (quality === 'auto') fail(`image_prices.prices.${quality}`, '`auto` is the provider\'s choice, held at the dearest entry: it has no price of its own')
    const row = new Map<string, bigint>()
    for (const [size, raw] of Object.entries(sizes)) {
      if (size === 'auto') fail(`image_prices.prices.${quality}.${size}`, '`auto` is the provider\'s choice, held at the dearest entry: it has no price of its own')
      try {
        row.set(size, parseMoney(raw))
      } catch (err) {
        fail(`image_prices.prices.${quality}.${size}`, isMoneyFormatError(err) ? err.message : String(err))
      }
    }
    if (row.size === 0) fail(`image_prices.prices.${quality}`, 'names no size')
    byQuality.set(quality, row)
  }
  if (byQuality.size === 0) fail('image_prices.prices', 'names no quality')
  const defaultQuality = p.default_quality ?? 'auto'
  const defaultSize = p.default_size ?? 'auto'
  if (defaultQuality !== 'auto' && !byQuality.has(defaultQuality)) fail('image_prices.default_quality', `is not priced (${[...byQuality.keys()].join(', ')})`)
  if (defaultSize !== 'auto' && ![...byQuality.values()].some((row) => row.has(defaultSize))) fail('image_prices.default_size', 'is not priced for any quality')
  return { byQuality, qualityParam: p.quality_param ?? 'quality', sizeParam: p.size_param ?? 'size', defaultQuality, defaultSize }
}
