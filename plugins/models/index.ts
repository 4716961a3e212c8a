import type { GatewayPlugin } from '../pipeline/plugin.js'
import { checkCapabilities, checkFileCapabilities } from './capabilities.js'
import type { ModelCatalogue } from './catalogue.js'
import { modelFromBody, modelFromPath } from './model-id.js'

export { compileModels, type CompiledModel, type ModelCatalogue } from './catalogue.js'

/**
 * resolve: the requested model (body `model`, path `{model}`, multipart field) → the catalogue
 * (not found, retired, paused, protocol), then the capabilities its input needs. A fallback
 * arrives with `ctx.model` already set: only its capabilities are checked.
 */
export function modelsPlugin (models: ModelCatalogue): GatewayPlugin {
  return {
    name: 'models',
    resolve (ctx) {
      if (ctx.model === null) {
        if (ctx.plan.upstream && !ctx.plan.modelInPath) return // job polls name no model
        const id = ctx.plan.modelInPath ? modelFromPath(ctx.params.model ?? '') : modelFromBody(ctx.body)
        ctx.requestedModelId = id
        ctx.model = models.resolve(id, ctx.plan.operation)
      }
      if (ctx.body?.kind === 'json') checkCapabilities(ctx.model, ctx.plan.op, ctx.body.json)
      else if (ctx.body?.kind === 'multipart') checkFileCapabilities(ctx.model, ctx.body.summary.files)
    }
  }
}
