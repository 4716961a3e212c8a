// Per-image prices by quality and size (`pricing.image_prices`): which entry a request names, which
// one its hold counts, which one its answer says was rendered. `auto` (or an absent value whose
// default is `auto`) is the provider's choice, so the hold counts the dearest entry it could pick.
// Pure.

/** The quality and size a request names (its values, or the table's defaults). */
import type { ImagePrices, ImageTier } from '../shapes/index.js'

export interface RequestedTier {
  quality: string
  size: string
  /** The parameter at fault when one of them is not a priced value (or not a string), else null. */
  unpriced: 'quality' | 'size' | null
}

/** What the request asks for, given `get(param)` reading a body parameter. */
export function requestedTier (prices: ImagePrices, get: (param: string) => unknown): RequestedTier {
  const q = get(prices.qualityParam)
  const s = get(prices.sizeParam)
  const quality = q === undefined || q === null ? prices.defaultQuality : q
  const size = s === undefined || s === null ? prices.defaultSize : s
  if (typeof quality !== 'string' || (quality !== 'auto' && !prices.byQuality.has(quality))) return { quality: String(quality), size: String(size), unpriced: 'quality' }
  const rows = quality === 'auto' ? [...prices.byQuality.values()] : [prices.byQuality.get(quality) as ReadonlyMap<string, bigint>]
  if (typeof size !== 'string' || (size !== 'auto' && !rows.some((row) => row.has(size)))) return { quality, size: String(size), unpriced: 'size' }
  // A named quality must price the named size (dall-e-3 hd has no 512x512).
  if (quality !== 'auto' && size !== 'auto' && !(rows[0] as ReadonlyMap<string, bigint>).has(size)) return { quality, size, unpriced: 'size' }
  return { quality, size, unpriced: null }
}

/** The dearest entry the request may be rendered at: `auto` ranges over every priced value. */
export function worstImageTier (prices: ImagePrices, asked: { quality: string, size: string }): ImageTier {
  let best: { tier: ImageTier, price: bigint } | null = null
  for (const [quality, row] of prices.byQuality) {
    if (asked.quality !== 'auto' && quality !== asked.quality) continue
    for (const [size, price] of row) {
      if (asked.size !== 'auto' && size !== asked.size) continue
      if (best === null || price > best.price) best = { tier: { quality, size }, price }
    }
  }
  // requestedTier refused anything else; the dearest of the table is never below.
  if (best !== null) return best.tier
  let dearest: { tier: ImageTier, price: bigint } = { tier: { quality: 'auto', size: 'auto' }, price: -1n }
  for (const [quality, row] of prices.byQuality) for (const [size, price] of row) if (price > dearest.price) dearest = { tier: { quality, size }, price }
  return dearest.tier
}

/**
 * The entry an answer was rendered at: the answer's `quality` / `size` where it says (gpt-image
 * models do), else the request's; undefined when either is still `auto` or not a string (the
 * meter then charges the entry the hold counted).
 */
export function renderedTier (answer: { quality?: unknown, size?: unknown }, asked: { quality?: unknown, size?: unknown }): ImageTier | undefined {
  const quality = typeof answer.quality === 'string' ? answer.quality : asked.quality
  const size = typeof answer.size === 'string' ? answer.size : asked.size
  if (typeof quality !== 'string' || typeof size !== 'string' || quality === 'auto' || size === 'auto') return undefined
  return { quality, size }
}
