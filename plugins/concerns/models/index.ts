import type { RequestContext } from '../../foundation/pipeline/context.js'
import type { GatewayPlugin } from '../../foundation/pipeline/plugin.js'
import { CachedRead } from '../../foundation/store/cached-read.js'
import type { ModelStatusStore } from '../../foundation/store/model-status.js'
import { checkCapabilities, checkFileCapabilities } from './capabilities.js'
import type { ModelCatalogue } from './catalogue.js'
import { modelFromBody, modelFromPath } from './model-id.js'
import type { RoutePlan } from '../../foundation/routes/compile.js'
export type { CompiledModel } from '../../foundation/shapes/index.js'

export { compileModels, compileModelTable, effectiveStatus, modelCatalogue, type ModelCatalogue, type ModelTable } from './catalogue.js'

/** How long an instance trusts what it read of the stored model statuses: a publish, pause or retire reaches every instance within this. */
export const MODEL_STATUS_CACHE_MS = 1000

function checkInput (ctx: RequestContext): void {
  if (ctx.model === null) return
  if (ctx.body?.kind === 'json') checkCapabilities(ctx.model, ctx.plan.op, ctx.body.json)
  else if (ctx.body?.kind === 'multipart') checkFileCapabilities(ctx.model, ctx.body.summary.files)
}

/**
 * resolve: the requested model (body `model`, path `{model}`, multipart field) → the catalogue
 * (not found or draft, retired, paused, protocol), then the capabilities its input needs. A
 * fallback arrives with `ctx.model` already set: only its capabilities are checked.
 *
 * With `statuses`, the statuses the admin API stored (publish, pause, retire) override the
 * configured ones. They are read whole through a short cache: a request waits for the database
 * at most once per MODEL_STATUS_CACHE_MS per instance, and not at all while the read holds.
 */
export function modelsPlugin (models: ModelCatalogue, statuses?: ModelStatusStore): GatewayPlugin {
  const cache = statuses === undefined
    ? null
    : new CachedRead(async (_all: 'all') => {
      const stored = await statuses.list()
      models.setStoredStatuses(stored)
      return stored
    }, MODEL_STATUS_CACHE_MS)
  const resolveModel = (ctx: RequestContext, id: string): void => {
    ctx.model = models.resolve(id, ctx.plan.operation)
    checkInput(ctx)
  }
  /** resolve on a route whose model id comes from `idOf`. */
  const resolver = (idOf: (ctx: RequestContext) => string) => (ctx: RequestContext): Promise<void> | undefined => {
    if (ctx.model !== null) {
      checkInput(ctx)
      return
    }
    // An alias of the route's family is the catalogue id from here on: access, price, limits, log.
    const id = models.canonicalId(ctx.plan.family, idOf(ctx))
    ctx.requestedModelId = id
    const fresh = cache?.read('all')
    if (fresh instanceof Promise) return fresh.then(() => { resolveModel(ctx, id) })
    resolveModel(ctx, id)
  }
  const fromPath = resolver((ctx) => modelFromPath(ctx.params.model ?? ''))
  const fromBody = resolver((ctx) => modelFromBody(ctx.body))
  /** A listing names no model but shows the statuses: they are read as fresh as a request's. */
  const statusesRead = (): Promise<void> | undefined => {
    const fresh = cache?.read('all')
    return fresh instanceof Promise ? fresh.then(() => undefined) : undefined
  }
  /** The route's resolve, decided from its plan: where its model id comes from; a job poll or download names none. */
  const resolveFor = (route: RoutePlan): ((ctx: RequestContext) => Promise<void> | undefined) | undefined => {
    if (route.listing !== undefined) return statusesRead
    if (!route.namesModel) return undefined
    return route.modelInPath ? fromPath : fromBody
  }
  return {
    name: 'models',
    resolve: (ctx) => resolveFor(ctx.plan)?.(ctx),
    forRoute: (route) => {
      const resolve = resolveFor(route)
      return resolve === undefined ? {} : { resolve }
    }
  }
}
