import type { GatewayPlugin } from '../pipeline/plugin.js'
import { checkBillableParameters } from './billable-parameters.js'
import { askedImageTier } from './image-tier-check.js'

/**
 * resolve: the body parameters the worst case depends on (`n`, the max-token fields and their
 * per-family equivalents) are integers in the target model's range, checked for every model
 * tried, before anything is held or forwarded. A model operation declared `cap_output_tokens`
 * lowers a max-token value above its range before forwarding (and the hold counts the lowered
 * value), so there such a value is accepted; it must still be a positive integer. A model
 * priced per image by quality and size refuses a value its table does not price.
 */
export function operationsPlugin (): GatewayPlugin {
  const plugin: GatewayPlugin = {
    name: 'operations',
    // A route that names no model (a job poll or download) has no parameters to bound.
    forRoute: (route) => route.namesModel ? plugin : {},
    resolve (ctx) {
      const model = ctx.model
      if (!model) return
      const capped = model.bodyRules.get(ctx.plan.operation)?.maxOutputTokens !== undefined
      checkBillableParameters(ctx.plan.op, capped ? { maxOutputTokens: undefined, maxImages: model.maxImages } : model, ctx.body)
      // A model priced per image by quality and size: both must be priced values (or auto).
      if (model.price.imagePrices !== undefined) askedImageTier(model.price.imagePrices, ctx.body)
    }
  }
  return plugin
}
