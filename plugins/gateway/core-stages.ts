import { gatewayError } from '../errors/index.js'
import { checkCapabilities } from '../models/capabilities.js'
import { checkBillableParameters } from '../operations/billable-parameters.js'
import type { ModelCatalogue } from '../models/catalogue.js'
import { modelFromBody, modelFromPath } from '../models/model-id.js'
import type { Stage } from './stages.js'

/** The body kind the route accepts, and per-item size caps of multipart files. */
export const requestStage: Stage = {
  name: 'request',
  priority: 100,
  run (ctx) {
    const accepted = ctx.plan.body
    const body = ctx.body
    if (!body) {
      if (accepted.includes('none')) return
      throw gatewayError('REQUEST_INVALID', { detail: 'A request body is required.' })
    }
    if (!accepted.includes(body.kind)) throw gatewayError('REQUEST_MEDIA_TYPE_UNSUPPORTED')
    if (body.kind === 'multipart') {
      for (const file of body.summary.files) {
        const cap = ctx.plan.itemLimits[file.field]
        if (cap !== undefined && file.size > cap) throw gatewayError('REQUEST_CONTENT_TOO_LARGE', { param: file.field })
      }
    }
  }
}

export function modelStage (models: ModelCatalogue): Stage {
  return {
    name: 'model',
    priority: 300,
    run (ctx) {
      if (ctx.plan.upstream && !ctx.plan.modelInPath) return // job polls name no model
      const id = ctx.plan.modelInPath ? modelFromPath(ctx.params.model ?? '') : modelFromBody(ctx.body)
      ctx.requestedModelId = id
      ctx.model = models.resolve(id, ctx.plan.operation)
    }
  }
}

export const capabilityStage: Stage = {
  name: 'capabilities',
  priority: 400,
  perModel: true,
  run (ctx) {
    if (!ctx.model) return
    if (ctx.body?.kind === 'json') checkCapabilities(ctx.model, ctx.plan.op, ctx.body.json)
    checkBillableParameters(ctx.plan.op, ctx.model, ctx.body)
  }
}
