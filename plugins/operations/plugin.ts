import type { GatewayPlugin } from '../pipeline/plugin.js'
import { checkBillableParameters } from './billable-parameters.js'

/**
 * resolve: the body parameters the worst case depends on (`n`, the max-token fields and their
 * per-family equivalents) are integers in the target model's range, checked for every model
 * tried, before anything is held or forwarded.
 */
export function operationsPlugin (): GatewayPlugin {
  return {
    name: 'operations',
    resolve (ctx) {
      if (ctx.model) checkBillableParameters(ctx.plan.op, ctx.model, ctx.body)
    }
  }
}
