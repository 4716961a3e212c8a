import { answersAsStream, type RequestContext, type Outcome } from '../../foundation/pipeline/context.js'
import type { GatewayPlugin } from '../../foundation/pipeline/plugin.js'
import type { Clock } from '../../foundation/store/clock.js'
import type { FeatureReceipt, RequestLogRow } from '../../foundation/store/request-log/types.js'
import type { RequestLogWriter } from '../../foundation/store/request-log/writer.js'
import type { Settled } from '../wallet/index.js'
import type { CompiledModel, Usage } from '../../foundation/shapes/index.js'

const UNSETTLED: Settled = { billing: 'UNKNOWN', cost: null, held: null, holdId: null, postingId: null, overage: null, unrecovered: null }

/**
 * The features of the usage as the receipt shows them: with the price the charge used, read from
 * the answering model's price list as gateway.yaml wrote it.
 */
function featureReceipts (usage: Usage, model: CompiledModel | null): Record<string, FeatureReceipt> | undefined {
  if (usage.features === undefined) return undefined
  const out: Record<string, FeatureReceipt> = {}
  for (const [name, f] of Object.entries(usage.features)) {
    const entry = model?.pricing.features?.[name]
    const price = typeof entry === 'object' ? entry.per_call ?? entry.per_use ?? entry.multiplier ?? null : null
    out[name] = { uses: f.uses, reported: f.reported, charge: f.charge, price: f.charge === 'tokens' ? null : price }
  }
  return out
}

/** The request log row of a finished request; never holds the key, only its id. */
export function requestRow (ctx: RequestContext, outcome: Outcome, now: Date): RequestLogRow {
  const auth = ctx.state.auth
  // No settlement recorded: it failed (its hold stays open for the reaper), so the charge is unknown.
  const settled = ctx.state.settled ?? UNSETTLED
  const usage = outcome.usage
  let logged: NonNullable<RequestLogRow['usage']> | null = null
  if (usage !== null) {
    logged = {
      inputTokens: usage.inputTokens,
      outputTokens: usage.outputTokens,
      cachedInputTokens: usage.cachedInputTokens,
      images: usage.images,
      audioSeconds: usage.audioSeconds,
      characters: usage.characters,
      calls: usage.calls,
      jobs: usage.jobs
    }
    // Set only when present (the receipt has no field for what was not used), after the
    // literal: conditional spreads in it are built through V8's slow path.
    if (usage.cacheWriteTokens !== undefined) logged.cacheWriteTokens = usage.cacheWriteTokens
    if (usage.cacheWrite1hTokens !== undefined) logged.cacheWrite1hTokens = usage.cacheWrite1hTokens
    if (usage.imageTier !== undefined) logged.imageTier = usage.imageTier
    if (usage.features !== undefined) logged.features = featureReceipts(usage, outcome.answeredModel)
  }
  return {
    requestId: ctx.requestId,
    accountId: auth?.account.id ?? null,
    keyId: auth?.key.id ?? null,
    route: ctx.plan.id,
    operation: ctx.plan.operation,
    requestedModel: ctx.requestedModelId,
    answeredModel: outcome.answeredModel?.id ?? null,
    status: outcome.httpStatus,
    outcome: outcome.kind,
    errorCode: outcome.errorCode,
    stream: answersAsStream(ctx),
    usage: logged,
    usageReported: usage?.reported ?? null,
    cost: settled.cost,
    held: settled.held,
    holdId: settled.holdId,
    postingId: settled.postingId,
    overage: settled.overage,
    unrecovered: settled.unrecovered,
    billingStatus: settled.billing,
    idempotencyKey: ctx.state.idempotency?.key ?? null,
    overheadMs: outcome.overheadMs,
    upstreamMs: outcome.upstreamMs,
    totalMs: Number(process.hrtime.bigint() - ctx.startedAt) / 1e6,
    createdAt: now
  }
}

export interface RequestLogDeps {
  writer: RequestLogWriter
  clock: Clock
}

/** finish: one request log row per request, queued (batched; never awaited on the hot path). */
export function requestLogPlugin (deps: RequestLogDeps): GatewayPlugin {
  return {
    name: 'request-log',
    finish (ctx, outcome) {
      deps.writer.write(requestRow(ctx, outcome, deps.clock.now()))
    }
  }
}
