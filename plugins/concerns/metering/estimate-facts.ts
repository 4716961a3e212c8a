// What the meter needs of the answering model to estimate usage the upstream did not report
// (plugins/concerns/metering/input-estimate.ts): the provider's model name, the model's per-image bound
// in tokens, its context window, and the output the request was held for. Computed only when
// an estimate is asked for (the output bound) or once per model (the rest).
import type { EstimateFacts } from './input-estimate.js'
import { worstCaseUsage } from '../../foundation/pricing/worst-case.js'
import type { RequestContext } from '../../foundation/pipeline/context.js'
import type { CompiledModel } from '../../foundation/shapes/index.js'

interface ModelFacts { upstreamModel: string, mediaItemTokens?: number, contextTokens?: number }

const byModel = new WeakMap<CompiledModel, ModelFacts>()

/** The url_media_item hold in input tokens of this model (rounded up), when it declares one. */
function mediaItemTokens (model: CompiledModel): number | undefined {
  const item = model.price.urlMediaItem
  const rate = model.price.input
  if (item === undefined || rate === undefined || rate.numerator <= 0n) return undefined
  return Number((item * rate.per + rate.numerator - 1n) / rate.numerator)
}

function modelFacts (model: CompiledModel): ModelFacts {
  let facts = byModel.get(model)
  if (facts === undefined) {
    const media = mediaItemTokens(model)
    const context = model.config.context_window
    facts = { upstreamModel: model.upstreamModel, ...(media === undefined ? {} : { mediaItemTokens: media }), ...(context === undefined ? {} : { contextTokens: context }) }
    byModel.set(model, facts)
  }
  return facts
}

export function estimateFacts (ctx: RequestContext, model: CompiledModel): EstimateFacts {
  const body = ctx.body
  const facts = modelFacts(model)
  // Written out rather than spread: this runs for every request (profiled: the spread cost 5 µs a call).
  return {
    upstreamModel: facts.upstreamModel,
    mediaItemTokens: facts.mediaItemTokens,
    contextTokens: facts.contextTokens,
    // The hold's own output bound (worst-case.ts): max tokens asked for, capped by the model's, per generation.
    outputCeiling: () => worstCaseUsage({
      bounds: ctx.plan.op.bounds,
      model: { pricing: model.pricing, maxImages: model.maxImages, ...(model.maxOutputTokens === undefined ? {} : { maxOutputTokens: model.maxOutputTokens }) },
      ...(body?.kind === 'json' ? { json: body.json } : {}),
      bodyBytes: body?.raw.length ?? 0
    }).outputTokens
  }
}
