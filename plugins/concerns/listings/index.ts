// Model listings (each family's `listings` in gateway.yaml): GET /v1/models, /v1/models/{id} and
// /genai/v1beta/models answered by the gateway from the catalogue, in the called family's format.
// The routes run the same admit (key, rate limit) and finish (request log, metrics) as every
// call; this plugin answers them in place of the upstream, and nothing is held or billed.
import type { FastifyReply } from 'fastify'
import type { CachedKey } from '../auth/index.js'
import { authOf } from '../auth/index.js'
import { billedHeader, gatewayError } from '../../foundation/errors/index.js'
import type { ModelCatalogue } from '../models/catalogue.js'
import { modelFromPath } from '../models/model-id.js'
import type { RequestContext } from '../../foundation/pipeline/context.js'
import type { ForwardControl, GatewayPlugin } from '../../foundation/pipeline/plugin.js'
import type { CompiledRoutes } from '../../foundation/routes/compile.js'
import { listingRoutes, type ListingRoute } from './compile.js'
import { modelList, oneModel } from './formats.js'
import type { CompiledModel } from '../../foundation/shapes/index.js'

export interface ListingsDeps {
  /** The plan's routes slice (the listing plans and the operations each family's routes serve). */
  routes: CompiledRoutes
  /** The catalogue with the stored statuses over it (the models concern keeps them fresh). */
  models: ModelCatalogue
}

/** Whether the key and its account may use the model (their allowed models; none: every model). */
function allowed (auth: CachedKey, id: string): boolean {
  const forKey = auth.key.allowedModels
  const forAccount = auth.account.allowedModels
  return (!forKey || forKey.includes(id)) && (!forAccount || forAccount.includes(id))
}

/** Whether a request of the listing's family can call the model at all (it serves one of the family's operations). */
function servedBy (route: ListingRoute, model: CompiledModel): boolean {
  for (const op of model.operations.keys()) if (route.operations.has(op)) return true
  return false
}

export function listingsPlugin (deps: ListingsDeps): GatewayPlugin {
  const { models } = deps
  const routes = listingRoutes(deps.routes)

  /** The models the key may use in the family: published (active now), allowed, callable there. */
  const listed = (route: ListingRoute, auth: CachedKey): CompiledModel[] =>
    models.list().filter((m) => models.statusOf(m.id) === 'active' && allowed(auth, m.id) && servedBy(route, m))

  /** One model, refused as a call for it would be: unknown or draft, retired, paused, other family, not allowed. */
  const retrieve = (route: ListingRoute, auth: CachedKey, ctx: RequestContext): CompiledModel => {
    const id = models.canonicalId(route.family, modelFromPath(ctx.params.id ?? ''))
    const model = models.get(id)
    const status = models.statusOf(id)
    if (model === undefined || status === undefined || status === 'draft') throw gatewayError('MODEL_NOT_FOUND', { param: 'model' })
    if (status === 'retired') throw gatewayError('MODEL_RETIRED', { param: 'model' })
    if (status === 'paused') throw gatewayError('MODEL_TEMPORARILY_UNAVAILABLE', { param: 'model' })
    if (!servedBy(route, model)) throw gatewayError('MODEL_PROTOCOL_UNSUPPORTED', { param: 'model' })
    if (!allowed(auth, model.id)) throw gatewayError('MODEL_ACCESS_DENIED', { param: 'model', detail: 'Refused by the allowed models of the API key or its account.' })
    return model
  }

  const answer = (route: ListingRoute) => async (ctx: RequestContext, _req: unknown, reply: FastifyReply, control: ForwardControl): Promise<void> => {
    const auth = authOf(ctx)
    // The auth concern admits every listing; without a key nothing is listed.
    if (auth === undefined) throw gatewayError('AUTH_INVALID_API_KEY')
    const body = route.one
      ? oneModel(route.format, retrieve(route, auth, ctx), route.operations)
      : modelList(route.format, listed(route, auth), route.operations, ctx.query)
    const outcome = { kind: 'completed', httpStatus: 200, errorCode: null, answeredModel: null, upstreamMs: null, usage: null, overheadMs: null } as const
    reply.code(200).headers({
      'content-type': 'application/json; charset=utf-8',
      'x-request-id': ctx.requestId,
      'x-gateway-billed': billedHeader(control.billingStatus(outcome))
    })
    reply.send(JSON.stringify(body))
    control.end(outcome)
  }

  return {
    name: 'listings',
    forRoute (plan) {
      const route = routes.get(plan)
      return route === undefined ? {} : { forward: answer(route) }
    }
  }
}
