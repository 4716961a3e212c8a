// The translator of every synchronous operation (translator.ts): the body goes up byte for byte
// but for the edits the catalogue declares, and the answer streams back through the meter of its
// operation. Job operations use it too, under jobs' target and answer.
import { askedImageTier } from '../../foundation/operations/image-tier-check.js'
import type { RequestContext } from '../../foundation/pipeline/context.js'
import { audioDurationBound } from '../../foundation/pricing/audio-bound.js'
import { worstImageTier } from '../../foundation/pricing/image-tier.js'
import { applyBodyRules } from '../../foundation/request/body-rules.js'
import { rewriteJsonModel } from '../../foundation/request/json-model.js'
import { rewriteMultipartModel } from '../../foundation/request/multipart-model.js'
import { applyCapEdits } from '../../foundation/request/uses-caps.js'
import { estimateFacts } from './estimate-facts.js'
import { injectIncludeUsage } from './include-usage.js'
import { createMeter } from './meter.js'
import type { Meter, RequestFacts } from './meter-types.js'
import type { Translator, UpstreamBody } from './translator.js'
import type { CompiledModel, ImagePrices } from '../../foundation/shapes/index.js'

function editedBody (ctx: RequestContext, model: CompiledModel | null): Buffer | undefined {
  const body = ctx.body
  if (!body) return undefined
  if (!model) return body.raw
  if (body.kind === 'json') {
    const rules = model.bodyRules.get(ctx.plan.operation)
    const ruled = rules === undefined ? body.raw : applyBodyRules(body.raw, rules) ?? body.raw
    // The hosted tools' uses caps the hold counted and the request left unset (features plugin).
    const edits = ctx.state.capEdits
    const raw = edits == null ? ruled : applyCapEdits(ruled, edits) ?? ruled
    if (typeof body.json.model !== 'string') return raw
    return rewriteJsonModel(raw, model.upstreamModel) ??
      Buffer.from(JSON.stringify({ ...body.json, model: model.upstreamModel }))
  }
  // Throws (REQUEST_INVALID, nothing sent or billed) when the part read is not the one found.
  return rewriteMultipartModel(body.raw, body.summary.boundary, body.summary.fields.model, model.upstreamModel) ?? body.raw
}

/**
 * A stream of an operation that may get a usage chunk (`op.usageChunk`: chat completions) always
 * asks the upstream for it (unless the model's provider sends it unasked), so the charge is
 * reported rather than estimated; `filter` is true when the client did not ask for it, and the
 * chunk must then be dropped from its stream.
 */
function withUsageRequested (ctx: RequestContext, model: CompiledModel | null, body: Buffer | undefined): UpstreamBody {
  if (!body || !ctx.plan.op.usageChunk || ctx.body?.kind !== 'json' || ctx.body.json.stream !== true) return { body, filter: false }
  // A provider that puts the usage in every stream (its model operation's `meter.stream_usage: always`) is asked nothing.
  if (model?.meters.get(ctx.plan.operation)?.streamUsageAlways === true) return { body, filter: false }
  const injected = injectIncludeUsage(body)
  return injected ? { body: injected, filter: true } : { body, filter: false }
}

/** The image entry asked for, and the one the hold counted for it (charged when the answer leaves `auto` unresolved). */
function imageTierFacts (prices: ImagePrices, body: RequestContext['body']): NonNullable<RequestFacts['imageTier']> {
  const asked = askedImageTier(prices, body)
  return { ...asked, worst: worstImageTier(prices, asked) }
}

/** What the meter needs to estimate usage when the upstream reports none. */
function meterOf (ctx: RequestContext, model: CompiledModel | null, sse: boolean, status: number, dropUsageEvents: boolean): Meter {
  const body = ctx.body
  const audio = body?.kind === 'multipart' ? body.summary.files.find((f) => f.field === 'file') : undefined
  const features = ctx.state.features
  const usagePaths = model?.meters.get(ctx.plan.operation)?.usage
  // Fixed properties, undefined where absent (the meters read them so): a literal of
  // conditional spreads is built through V8's slow path, on every answer.
  return createMeter({
    meter: ctx.plan.op.meter,
    usagePaths,
    sse,
    status,
    dropUsageEvents,
    features: features !== undefined && features.length > 0
      ? features.map((u) => ({ name: u.feature.name, charge: u.feature.charge, report: u.feature.report, worstUses: u.uses }))
      : undefined,
    unit: model?.pricing.unit,
    estimate: model ? estimateFacts(ctx, model) : undefined,
    request: {
      json: body?.kind === 'json' ? body.json : undefined,
      multipartFields: body?.kind === 'multipart' ? body.summary.fields : undefined,
      // What is estimated when the provider reports nothing: the bound the hold counted, never a header alone.
      audioSeconds: audio ? audioDurationBound(audio).millis / 1000 : undefined,
      imageTier: model?.price.imagePrices === undefined ? undefined : imageTierFacts(model.price.imagePrices, body)
    }
  })
}

/**
 * The request edits the catalogue declares, and the meter of the operation; the model's pool,
 * the relay. `target` and `answer` are spelt out as absent so every translator (jobs' spread
 * this one) has the same shape: the forward phase's calls through it stay monomorphic.
 */
export const passthrough: Translator = {
  requestBody: (ctx, model) => withUsageRequested(ctx, model, editedBody(ctx, model)),
  meter: meterOf,
  target: undefined,
  answer: undefined
}
