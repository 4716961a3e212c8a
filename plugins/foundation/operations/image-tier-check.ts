// A model priced per image by quality and size (`pricing.image_prices`) bills each image at its
// entry: a quality or size its table does not price is refused before the hold, naming the
// parameter, since no hold could bound what the provider would make of it.
import { gatewayError } from '../errors/index.js'
import { requestedTier } from '../pricing/image-tier.js'
import { paramValue } from './billable-parameters.js'
import type { ImagePrices, ParsedBody } from '../shapes/index.js'

function reader (body: ParsedBody | undefined): (param: string) => unknown {
  return (param) => paramValue(body, { name: param, keys: [param] })
}

/** The quality and size the request asks for (defaults applied); MODEL_PARAMETER_UNSUPPORTED when one is not priced. */
export function askedImageTier (prices: ImagePrices, body: ParsedBody | undefined): { quality: string, size: string } {
  const asked = requestedTier(prices, reader(body))
  if (asked.unpriced !== null) {
    const param = asked.unpriced === 'quality' ? prices.qualityParam : prices.sizeParam
    const value = asked.unpriced === 'quality' ? asked.quality : asked.size
    const priced = asked.unpriced === 'quality'
      ? [...prices.byQuality.keys()]
      : [...new Set([...(asked.quality === 'auto' ? [...prices.byQuality.values()] : [prices.byQuality.get(asked.quality)]).flatMap((row) => [...(row?.keys() ?? [])])])]
    throw gatewayError('MODEL_PARAMETER_UNSUPPORTED', { param, detail: `"${param}" ${JSON.stringify(value).slice(0, 40)} is not priced for this model (${['auto', ...priced].join(', ')}).` })
  }
  return { quality: asked.quality, size: asked.size }
}
