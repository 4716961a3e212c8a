import { gatewayError } from '../errors/index.js'
import type { RequestContext } from '../pipeline/context.js'
import type { RoutePlan } from '../routes/compile.js'

/**
 * The first deferred-work parameter a JSON body turns on, or null. A parameter set to false or
 * null asks for nothing; any other value does (a provider may read `"true"` or 1 as true).
 */
export function deferredParamOf (plan: Pick<RoutePlan, 'deferredParams' | 'job'>, json: Readonly<Record<string, unknown>>): string | null {
  if (plan.job === 'create') return null // a job route prices and settles deferred work
  for (const name of plan.deferredParams) {
    const value = json[name]
    if (value !== undefined && value !== null && value !== false) return name
  }
  return null
}

/**
 * Refuses a request for deferred work (`background: true` on responses, as the route declares
 * it) on a route that is not a job route: the provider would answer `queued` with no usage and
 * generate the whole answer later, after the request settled. Refused after authentication and
 * before anything is held, forwarded or billed.
 */
export function refuseDeferredWork (ctx: RequestContext): void {
  if (ctx.plan.deferredParams.length === 0 || ctx.body?.kind !== 'json') return
  const param = deferredParamOf(ctx.plan, ctx.body.json)
  if (param !== null) {
    throw gatewayError('MODEL_PARAMETER_UNSUPPORTED', { param, detail: `Deferred work (\`${param}\`) is not offered on this endpoint; send the request without it.` })
  }
}
