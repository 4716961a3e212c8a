import type { LimitsConfig, WalletConfig } from '../../foundation/config/types.js'
import { gatewayError } from '../../foundation/errors/index.js'
import { authOf } from '../auth/index.js'
import type { RequestContext } from '../../foundation/pipeline/context.js'
import { inputPasses, jobUnits, referencedMedia, worstFeatures } from '../../foundation/operations/index.js'
import { audioDurationBoundAsync, BOUNDED_FORMATS } from '../../foundation/pricing/audio-bound.js'
import { costOf } from '../../foundation/pricing/cost.js'
import { urlMediaHold } from '../../foundation/pricing/url-media.js'
import { featuresAtWorst, worstCaseUsage, type WorstCaseInput } from '../../foundation/pricing/worst-case.js'
import { worstImageTier } from '../../foundation/pricing/image-tier.js'
import { askedImageTier } from '../../foundation/operations/image-tier-check.js'
import type { CapRefusal, HoldCaps } from '../../foundation/store/ledger/caps.js'
import type { ApiKeyRecord } from '../../foundation/store/types.js'
import { compileBounds } from './bound.js'
import type { HoldKeeper } from './hold-renewal.js'
import type { Wallet } from './wallet.js'
import type { CompiledModel } from '../../foundation/shapes/index.js'

/** The hold placed for a request: settled after the upstream finishes, or released. */
export interface RequestHold {
  holdId: string
  amount: bigint
  accountId: string
  model: CompiledModel
  /** Set once the hold was settled or released, so it never happens twice. */
  closed: boolean
}

export function holdOf (ctx: RequestContext): RequestHold | undefined {
  return ctx.state.hold
}

export interface WalletDeps {
  /** Where the hold is placed (and a previous model's hold released). */
  wallet: Pick<Wallet, 'hold' | 'release'>
  config: WalletConfig
  /** The tiers: each one's overdraft lowers the bound (wallet.floor − overdraft) of its accounts. */
  limits: Pick<LimitsConfig, 'default_tier' | 'tiers'>
  /** Renews each hold while its request runs (settle drops it). */
  keeper?: HoldKeeper
}

/** Worst-case cost of the request at this model's price, features and media by reference included. */
export function worstCaseCost (ctx: RequestContext, model: CompiledModel): bigint {
  return worstCase(ctx, model).cost
}

/**
 * The worst case of a request: its cost, and the images it may produce when its operation is
 * metered in images. Input the body does not bound (media by URL or file id, features that fetch
 * or search) is held at the model's context window, once per pass the provider may make over it;
 * the features the request uses at their caps (features plugin: every one is priced, and there is
 * a context window, or the request was refused in resolve).
 */
function worstCase (ctx: RequestContext, model: CompiledModel): { cost: bigint, images: number } {
  const body = ctx.body
  const uses = ctx.state.features ?? []
  const media = referencedMedia(ctx, model)
  const passes = inputPasses(uses, media)
  // The features plugin refuses this in resolve; a pipeline built without it must not hold less.
  if (passes !== undefined && model.contextWindow === undefined) throw gatewayError('MODEL_PARAMETER_UNSUPPORTED', { detail: 'The request makes the provider read input the gateway cannot count, and this model declares no context window to bound it.' })
  const declared = worstFeatures(uses)
  const features = declared === undefined ? undefined : featuresAtWorst(model.price, declared)
  const outputPaths = model.meters.get(ctx.plan.operation)?.usage?.outputTokens?.length ?? 1
  // Fixed properties, undefined where absent (worstCaseUsage reads them so): a literal of
  // conditional spreads is built through V8's slow path, on every hold.
  const input: WorstCaseInput = {
    bounds: ctx.plan.op.bounds,
    model: {
      pricing: model.pricing,
      maxImages: model.maxImages,
      outputCountsBeside: outputPaths - 1,
      maxOutputTokens: model.maxOutputTokens,
      contextTokens: model.contextWindow
    },
    json: body?.kind === 'json' ? body.json : undefined,
    multipart: body?.kind === 'multipart' ? { fields: body.summary.fields, files: body.summary.files } : undefined,
    bodyBytes: body?.raw.length ?? 0,
    inputPasses: passes,
    features,
    jobUnits: ctx.plan.op.bounds.jobUnits.length === 0 ? undefined : jobUnits(ctx.plan.op, body)
  }
  // Each URL item and inline image adds one image's most (url_media_item), for models that declare it.
  const items = urlMediaHold(model.price, media.urls + media.inlineImages)
  const usage = worstCaseUsage(input)
  // Per-image prices by quality and size: each image at the dearest entry the request allows.
  const prices = model.price.imagePrices
  if (prices !== undefined) usage.imageTier = worstImageTier(prices, askedImageTier(prices, body))
  // Prompt-cache writes: a request that marks `cache_control` may have its whole input written,
  // at the dearest write rate it may use (1-hour writes only where it asks for them).
  const writes = cacheWriteBound(model.price, body)
  if (writes !== undefined) usage[writes] = usage.inputTokens - usage.cachedInputTokens
  return { cost: costOf(model.price, usage) + items, images: ctx.plan.op.meter.kind === 'images' ? usage.images : 0 }
}

const CACHE_CONTROL = Buffer.from('"cache_control"')
const ONE_HOUR = /"ttl"\s*:\s*"1h"/
const ESCAPE = Buffer.from('\\u')

/** The `cache_control` marks of a parsed body, at any depth: whether any, and whether one asks for 1 h. */
function cacheMarks (value: unknown, depth = 0): { any: boolean, hour: boolean } {
  const found = { any: false, hour: false }
  if (depth > 64 || typeof value !== 'object' || value === null) return found
  for (const [key, v] of Object.entries(value)) {
    if (key === 'cache_control') {
      found.any = true
      if (typeof v === 'object' && v !== null && (v as { ttl?: unknown }).ttl === '1h') found.hour = true
    }
    const inner = cacheMarks(v, depth + 1)
    found.any ||= inner.any
    found.hour ||= inner.hour
    if (found.hour) break
  }
  return found
}

/**
 * Which cache-write field the hold counts the input as, or undefined: none when the body marks
 * no `cache_control` or when writing costs no more than plain input. A byte search, so a body of
 * any depth costs one scan; a body with a \u escape (which could spell the key or the ttl so that
 * the bytes do not show them, while the provider's JSON parser reads them) is walked parsed.
 */
export function cacheWriteBound (price: CompiledModel['price'], body: RequestContext['body']): 'cacheWriteTokens' | 'cacheWrite1hTokens' | undefined {
  if (body?.kind !== 'json' || price.input === undefined || (price.cacheWrite === undefined && price.cacheWrite1h === undefined)) return undefined
  const escaped = body.raw.includes(ESCAPE)
  const marks = escaped ? cacheMarks(body.json) : { any: body.raw.includes(CACHE_CONTROL), hour: false }
  if (!marks.any) return undefined
  const rate = (r: { numerator: bigint, per: bigint } | undefined): bigint => r === undefined ? 0n : r.numerator * 1_000_000_000n / r.per
  const input = rate(price.input)
  const five = rate(price.cacheWrite ?? price.input)
  const oneHour = escaped ? marks.hour : ONE_HOUR.test(body.raw.toString('latin1'))
  const hour = oneHour ? rate(price.cacheWrite1h ?? price.cacheWrite ?? price.input) : 0n
  if (hour > five && hour > input) return 'cacheWrite1hTokens'
  return five > input ? 'cacheWriteTokens' : undefined
}

/** The caps a key's hold is checked against, or undefined for a key without any (no extra statement). */
function capsOf (key: ApiKeyRecord, images: number): HoldCaps | undefined {
  if (key.quota === null && key.dailySpendCap === null && key.monthlySpendCap === null && key.dailyImageCap === null) return undefined
  return {
    keyId: key.id,
    timezone: key.timezone,
    quota: key.quota,
    dailySpendCap: key.dailySpendCap,
    monthlySpendCap: key.monthlySpendCap,
    dailyImageCap: key.dailyImageCap,
    images
  }
}

/** The refusal naming the cap that would be exceeded. */
function capError (cap: CapRefusal): Error {
  switch (cap) {
    case 'quota': return gatewayError('LIMIT_API_KEY_QUOTA_EXHAUSTED', { detail: 'Cap: quota (lifetime).' })
    case 'monthly_spend_cap': return gatewayError('LIMIT_API_KEY_QUOTA_EXHAUSTED', { detail: 'Cap: monthly_spend_cap (the last 30 days).' })
    case 'daily_spend_cap': return gatewayError('LIMIT_API_KEY_DAILY_QUOTA_EXHAUSTED')
    case 'daily_image_cap': return gatewayError('LIMIT_IMAGE_DAILY_CAP')
  }
}

/**
 * Holds the worst-case cost before anything is sent upstream; refuses the request when the
 * wallet cannot hold it. Runs again for each fallback model (its price may differ): the
 * previous hold is released first.
 */
export function holdWorstCase (deps: WalletDeps): (ctx: RequestContext) => Promise<void> {
  const boundOf = compileBounds(deps.config, deps.limits)
  return async (ctx) => {
    const model = ctx.model
    const auth = authOf(ctx)
    if (!model || !auth) return // job polls bill nothing
    if (model.requiresTopup && !auth.account.toppedUp) throw gatewayError('MODEL_REQUIRES_TOPUP', { param: 'model' })
    const previous = holdOf(ctx)
    if (previous && !previous.closed) {
      previous.closed = true
      deps.keeper?.drop(previous.holdId)
      await deps.wallet.release(previous.holdId)
    }
    // Uploaded files are walked for their audio bound a slice at a time, other requests served
    // between slices; worstCase and the meter then reuse the result.
    if (ctx.body?.kind === 'multipart') {
      for (const file of ctx.body.summary.files) {
        const bound = await audioDurationBoundAsync(file)
        // Priced per second of audio: a file whose bytes bound no duration is refused, not held at a guess.
        if (bound.refused !== undefined && model.price.unit === 'audio_second') {
          throw gatewayError('REQUEST_MEDIA_TYPE_UNSUPPORTED', { param: file.field, detail: `The gateway cannot bound the duration of audio in ${bound.refused}, so it cannot hold for it; send ${BOUNDED_FORMATS} (convert the file first).` })
        }
      }
    }
    const { cost: amount, images } = worstCase(ctx, model)
    // A job's charge comes when the job ends: its hold lives longer.
    const ttlMs = ctx.plan.op.job?.role === 'create' ? deps.config.job_hold_ttl_ms : deps.config.hold_ttl_ms
    const caps = capsOf(auth.key, images)
    // The account's bound: the hold may take it no lower, and neither may its settle.
    const floor = boundOf(auth.account.tier)
    const held = await deps.wallet.hold(caps === undefined
      ? { accountId: auth.account.id, amount, floor, requestId: ctx.requestId, ttlMs }
      : { accountId: auth.account.id, amount, floor, requestId: ctx.requestId, ttlMs, caps })
    if (!held.ok) {
      delete ctx.state.hold
      if (held.error === 'cap') throw capError(held.cap)
      // After an unrecovered overage the wallet waits for a top-up, whatever its balance says.
      throw held.error === 'topup_required'
        ? gatewayError('BILLING_INSUFFICIENT_CREDITS', { detail: 'An earlier request cost more than this account could pay; top up to continue.' })
        : gatewayError('BILLING_INSUFFICIENT_CREDITS')
    }
    const hold: RequestHold = { holdId: held.holdId, amount, accountId: auth.account.id, model, closed: false }
    ctx.state.hold = hold
    deps.keeper?.keep(hold, ttlMs)
    ctx.billing = 'PENDING'
  }
}
