// Refusals a request earns by itself, judged from what gateway.yaml declares per route and per
// model: item caps, real file formats, content policy, the video-generation matrix, service
// tiers, parameter ranges and context windows. Every check runs in resolve, before the charge
// phase: a refused request is neither held, forwarded nor billed. Only what is declared is
// checked, decided once here: a route and model that declare nothing cost one map lookup each,
// and a config that declares nothing at all adds no hook.
import type { GatewayConfig, ModelConfig, ParameterRuleConfig, RouteConfig, VideoGenerationConfig } from '../../foundation/config/types.js'
import type { FastifyBaseLogger, FastifyRequest } from 'fastify'
import { gatewayError, type GatewayError } from '../../foundation/errors/index.js'
import { tokensFromChars } from '../metering/usage.js'
import { requestChars } from '../metering/request-text.js'
import { paramValue } from '../../foundation/operations/billable-parameters.js'
import type { RequestContext } from '../../foundation/pipeline/context.js'
import type { GatewayPlugin } from '../../foundation/pipeline/plugin.js'
import { formatAccepted, sniffFormat } from './magic.js'
import { ContentPolicy } from './policy.js'
import { judgeText, largestInline, videoInputs } from './scan.js'
import type { CompiledModel, ParamPath, ParsedBody } from '../../foundation/shapes/index.js'

export { sniffFormat, FORMAT_NAMES, type MediaFormat } from './magic.js'

/** What one route declares. */
interface RouteChecks {
  readonly inlineImageBytes: number | undefined
  readonly inlineVideoBytes: number | undefined
  readonly promptChars: number | undefined
  /** Multipart file field → accepted format names and kinds. */
  readonly fileFormats: ReadonlyMap<string, ReadonlySet<string>> | undefined
  readonly policy: ContentPolicy | undefined
}

interface ParameterCheck {
  readonly name: string
  readonly path: { readonly name: string, readonly keys: readonly string[] }
  readonly rule: ParameterRuleConfig
  readonly values: ReadonlySet<unknown> | undefined
}

/** What one model declares. */
interface ModelChecks {
  readonly contextWindow: number | undefined
  readonly serviceTiers: ReadonlySet<string> | undefined
  readonly parameters: readonly ParameterCheck[]
  readonly video: VideoGenerationConfig | undefined
  readonly policy: ContentPolicy | undefined
}

function compileRoute (r: RouteConfig, where: string): RouteChecks | undefined {
  const limits = r.content_limits ?? {}
  const formats = r.file_formats === undefined
    ? undefined
    : new Map(Object.entries(r.file_formats).map(([field, list]) => [field, new Set(list)] as const))
  const policy = r.content_policy !== undefined && r.content_policy.length > 0 ? new ContentPolicy(r.content_policy, where) : undefined
  const checks: RouteChecks = {
    inlineImageBytes: limits.inline_image_bytes,
    inlineVideoBytes: limits.inline_video_bytes,
    promptChars: limits.prompt_chars,
    fileFormats: formats !== undefined && formats.size > 0 ? formats : undefined,
    policy
  }
  const declares = checks.inlineImageBytes !== undefined || checks.inlineVideoBytes !== undefined ||
    checks.promptChars !== undefined || checks.fileFormats !== undefined || checks.policy !== undefined
  return declares ? Object.freeze(checks) : undefined
}

function compileModel (m: ModelConfig, where: string): ModelChecks | undefined {
  const parameters = Object.entries(m.parameters ?? {}).map(([name, rule]) => Object.freeze({
    name,
    path: Object.freeze({ name, keys: Object.freeze(name.split('.')) }),
    rule,
    values: rule.values === undefined ? undefined : new Set<unknown>(rule.values)
  }))
  const checks: ModelChecks = {
    contextWindow: m.context_window,
    serviceTiers: m.service_tiers === undefined ? undefined : new Set(m.service_tiers),
    parameters: Object.freeze(parameters),
    video: m.video_generation,
    policy: m.content_policy !== undefined && m.content_policy.length > 0 ? new ContentPolicy(m.content_policy, where) : undefined
  }
  const declares = checks.contextWindow !== undefined || checks.serviceTiers !== undefined ||
    checks.parameters.length > 0 || checks.video !== undefined || checks.policy !== undefined
  return declares ? Object.freeze(checks) : undefined
}

function jsonOf (body: ParsedBody | undefined): Record<string, unknown> | undefined {
  return body?.kind === 'json' ? body.json : undefined
}

function fieldsOf (body: ParsedBody | undefined): Record<string, string> | undefined {
  return body?.kind === 'multipart' ? body.summary.fields : undefined
}

function checkRoute (c: RouteChecks, ctx: RequestContext, log: FastifyBaseLogger): void {
  const body = ctx.body
  if (body === undefined) return
  if (c.promptChars !== undefined && requestChars(body.kind === 'json' ? { json: body.json } : { multipartFields: body.summary.fields }) > c.promptChars) {
    throw gatewayError('REQUEST_CONTENT_TOO_LARGE', { param: 'prompt', detail: `The prompt is longer than ${c.promptChars} characters.` })
  }
  if (body.kind === 'json' && (c.inlineImageBytes !== undefined || c.inlineVideoBytes !== undefined)) {
    const { image, video } = largestInline(body.json)
    if (image !== null && c.inlineImageBytes !== undefined && image.bytes > c.inlineImageBytes) {
      throw gatewayError('REQUEST_CONTENT_TOO_LARGE', { param: image.param, detail: `An inline image is larger than ${c.inlineImageBytes} bytes.` })
    }
    if (video !== null && c.inlineVideoBytes !== undefined && video.bytes > c.inlineVideoBytes) {
      throw gatewayError('REQUEST_CONTENT_TOO_LARGE', { param: video.param, detail: `An inline video is larger than ${c.inlineVideoBytes} bytes.` })
    }
  }
  if (body.kind === 'multipart' && c.fileFormats !== undefined) {
    for (const file of body.summary.files) {
      const accepted = c.fileFormats.get(file.field)
      if (accepted === undefined) continue
      const format = sniffFormat(file.head)
      // An unknown format is the provider's to judge; a known one must be one the field takes.
      if (format !== null && !formatAccepted(format, accepted)) {
        throw gatewayError('REQUEST_MEDIA_TYPE_UNSUPPORTED', { param: file.field, detail: `The ${file.field} file is ${format.name}, which this endpoint does not accept.` })
      }
    }
  }
  if (c.policy !== undefined) {
    const rule = judgeText(jsonOf(body), fieldsOf(body), c.policy)
    if (rule !== null) {
      throw blocked(log, ctx, rule, 'route')
    }
  }
}

/** Logs the rule's name (never the content) and returns the refusal. */
function blocked (log: FastifyBaseLogger, ctx: RequestContext, rule: string, scope: 'route' | 'model'): GatewayError {
  log.warn({ requestId: ctx.requestId, rule, scope, model: ctx.model?.id }, 'content policy refused the request')
  return gatewayError('REQUEST_CONTENT_BLOCKED')
}

function checkVideo (v: VideoGenerationConfig, body: ParsedBody): void {
  const asked = videoInputs(jsonOf(body), body.kind === 'multipart' ? body.summary.files.map((f) => f.field) : [])
  if (asked.lastFrame && !asked.firstFrame) throw gatewayError('MODEL_FIRST_FRAME_REQUIRED', { param: 'lastFrame' })
  if (asked.firstFrame && v.image_to_video === false) throw gatewayError('MODEL_IMAGE_TO_VIDEO_UNSUPPORTED', { param: 'image' })
  if (!asked.firstFrame && v.text_to_video === false) throw gatewayError('MODEL_TEXT_TO_VIDEO_UNSUPPORTED', { param: 'image' })
  if (asked.lastFrame && v.last_frame === false) throw gatewayError('MODEL_LAST_FRAME_UNSUPPORTED', { param: 'lastFrame' })
  if (asked.referenceImages && v.reference_images === false) throw gatewayError('MODEL_REFERENCE_IMAGE_UNSUPPORTED', { param: 'referenceImages' })
}

function checkParameter (p: ParameterCheck, body: ParsedBody): void {
  const raw = paramValue(body, p.path)
  if (raw === undefined || raw === null) return
  // Multipart fields are text: a numeric range reads them as numbers.
  const value = typeof raw === 'string' && body.kind === 'multipart' && (p.rule.min !== undefined || p.rule.max !== undefined) && raw.trim() !== '' ? Number(raw) : raw
  if (p.values !== undefined && !p.values.has(value) && !p.values.has(raw)) {
    throw gatewayError('MODEL_PARAMETER_UNSUPPORTED', { param: p.name, detail: `This model does not accept this "${p.name}" value.` })
  }
  if (p.rule.min !== undefined || p.rule.max !== undefined) {
    if (typeof value !== 'number' || !Number.isFinite(value) ||
      (p.rule.min !== undefined && value < p.rule.min) || (p.rule.max !== undefined && value > p.rule.max)) {
      throw gatewayError('MODEL_PARAMETER_UNSUPPORTED', {
        param: p.name,
        detail: `"${p.name}" must be a number${p.rule.min !== undefined ? ` from ${p.rule.min}` : ''}${p.rule.max !== undefined ? ` up to ${p.rule.max}` : ''} for this model.`
      })
    }
  }
}

/** The output the request asks for: its largest max-token parameter, lowered to the model's cap where the gateway lowers it. */
function requestedOutput (ctx: RequestContext, model: CompiledModel, body: ParsedBody): number {
  let asked = 0
  const paths = ctx.plan.op.bounds.maxTokens
  for (let i = 0; i < paths.length; i++) {
    const v = paramValue(body, paths[i] as ParamPath)
    const n = typeof v === 'string' ? Number(v) : v
    if (typeof n === 'number' && Number.isSafeInteger(n) && n > asked) asked = n
  }
  const cap = model.bodyRules.get(ctx.plan.operation)?.maxOutputTokens
  return cap !== undefined && asked > cap ? cap : asked
}

function checkModel (c: ModelChecks, ctx: RequestContext, model: CompiledModel, log: FastifyBaseLogger): void {
  const body = ctx.body
  if (body === undefined) return
  if (c.video !== undefined) checkVideo(c.video, body)
  if (c.serviceTiers !== undefined) {
    const tier = body.kind === 'json' ? body.json.service_tier : body.summary.fields.service_tier
    if (tier !== undefined && tier !== null && (typeof tier !== 'string' || !c.serviceTiers.has(tier))) {
      throw gatewayError('MODEL_SERVICE_TIER_UNAVAILABLE', { param: 'service_tier' })
    }
  }
  for (let i = 0; i < c.parameters.length; i++) checkParameter(c.parameters[i] as typeof c.parameters[number], body)
  if (c.contextWindow !== undefined) {
    const input = tokensFromChars(requestChars(body.kind === 'json' ? { json: body.json } : { multipartFields: body.summary.fields }))
    const total = input + requestedOutput(ctx, model, body)
    if (total > c.contextWindow) {
      throw gatewayError('MODEL_CONTEXT_EXCEEDED', { param: 'messages', detail: `About ${total} tokens were asked for (input and requested output); this model's context window is ${c.contextWindow}.` })
    }
  }
  if (c.policy !== undefined) {
    const rule = judgeText(jsonOf(body), fieldsOf(body), c.policy)
    if (rule !== null) {
      throw blocked(log, ctx, rule, 'model')
    }
  }
}

export interface AdmissionChecks {
  /** Routes (by plan id, `METHOD path`) that declare at least one check. */
  readonly routes: ReadonlyMap<string, RouteChecks>
  /** Models (by id) that declare at least one check. */
  readonly models: ReadonlyMap<string, ModelChecks>
}

/** Pure (the plan's admission slice): what gateway.yaml declares; throws on an invalid content-policy pattern. */
export function compileAdmission (config: Pick<GatewayConfig, 'routes' | 'models'>): AdmissionChecks {
  const routes = new Map<string, RouteChecks>()
  config.routes.forEach((r, i) => {
    const c = compileRoute(r, `routes[${i}] (${r.path})`)
    if (c !== undefined) routes.set(`${r.method} ${r.path}`, c)
  })
  const byModel = new Map<string, ModelChecks>()
  config.models.forEach((m, i) => {
    const c = compileModel(m, `models[${i}] (${m.id})`)
    if (c !== undefined) byModel.set(m.id, c)
  })
  return { routes, models: byModel }
}

/**
 * resolve: the route's checks (item caps, file formats, content policy) and the target model's
 * (video matrix, service tier, parameter ranges, context window, content policy), for the
 * primary model and again for each fallback. Listed after the models concern (which sets
 * `ctx.model`) and before the wallet.
 */
export function admissionPlugin (checks: AdmissionChecks): GatewayPlugin {
  if (checks.routes.size === 0 && checks.models.size === 0) return { name: 'admission' }
  const { routes, models: byModel } = checks
  /** The route's checks (`r`, undefined: it declares none), then the target model's. */
  const check = (r: RouteChecks | undefined, ctx: RequestContext, req: FastifyRequest): void => {
    if (r !== undefined) checkRoute(r, ctx, req.log)
    const model = ctx.model
    const m = model === null || byModel.size === 0 ? undefined : byModel.get(model.id)
    if (m !== undefined && model !== null) checkModel(m, ctx, model, req.log)
  }
  return {
    name: 'admission',
    resolve: (ctx, req) => { check(routes.size === 0 ? undefined : routes.get(ctx.plan.id), ctx, req) },
    // A route that declares no check and meets no model that declares one runs no admission hook.
    forRoute (route) {
      const r = routes.get(route.id)
      if (r === undefined && (byModel.size === 0 || !route.namesModel)) return {}
      return { resolve: (ctx, req) => { check(r, ctx, req) } }
    }
  }
}
