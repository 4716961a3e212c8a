import type { BillingStatus } from '../errors/index.js'
import type { Outcome, RequestContext } from '../gateway/context.js'
import { costOf } from '../pricing/cost.js'
import type { Usage } from '../pricing/usage-types.js'
import type { CompiledModel, ModelCatalogue } from '../models/catalogue.js'
import type { Clock } from '../store/clock.js'
import type { JobHoldStore } from '../store/jobs/types.js'
import type { LedgerStore } from '../store/ledger/types.js'
import type { HoldKeeper } from './hold-renewal.js'
import { holdOf, JOB_OPERATIONS } from './wallet-stage.js'

export interface SettleDeps {
  ledger: LedgerStore
  jobs: JobHoldStore
  models: ModelCatalogue
  clock: Clock
  /** Stops the renewal of a hold once it is settled (see hold-renewal). */
  keeper?: HoldKeeper
}

/** Which upstream job namespace an operation's job ids live in (a create and its poll agree). */
const JOB_KIND: Readonly<Record<string, string>> = {
  'videos.create': 'video',
  'videos.get': 'video',
  'music.create': 'music',
  'jobs.get': 'music',
  'genai.generateVideos': 'genai-operation'
}
const JOB_POLLS: ReadonlySet<string> = new Set(['videos.get', 'jobs.get'])
const ONE_JOB: Usage = { inputTokens: 0, outputTokens: 0, cachedInputTokens: 0, images: 0, audioSeconds: 0, characters: 0, calls: 0, jobs: 1, reported: true }

export interface Settled {
  billing: BillingStatus
  cost: bigint | null
  held: bigint | null
  holdId: string | null
  postingId: string | null
  capped: boolean
}

/**
 * Ledger writes are retried: settle and release are exactly-once per hold in the ledger, so a
 * retry after a lost acknowledgement changes nothing, and a transient database failure does
 * not leave a served request to the reaper (which would release it unbilled).
 */
async function withRetry<T> (op: () => Promise<T>, attempts = 5, delayMs = 100): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await op()
    } catch (err) {
      if (i >= attempts) throw err
      await new Promise((resolve) => setTimeout(resolve, delayMs * 2 ** (i - 1)))
    }
  }
}

const NOTHING: Settled = { billing: 'NOT_BILLED', cost: null, held: null, holdId: null, postingId: null, capped: false }
const NOT_BILLED = { status: 'NOT_BILLED', charge: 0n } as const

/** What the request costs at the price of the model that answered, or 0 when nothing was produced. */
export function chargeFor (outcome: Outcome, usage: Usage | null): bigint {
  if (!outcome.answeredModel || !usage) return 0n
  return costOf(outcome.answeredModel.price, usage)
}

/** Whether an answer delivered anything: generated tokens or images (input alone is not an answer). */
function producedOutput (usage: Usage | null): boolean {
  return usage !== null && (usage.outputTokens > 0 || usage.images > 0)
}

/** Billing status of a request's end, decided before the ledger write so error frames can carry it. */
export function billingStatusFor (ctx: RequestContext, outcome: Outcome, usage: Usage | null): BillingStatus {
  return billingDecision(ctx, outcome, usage).status
}

/** The billing status and, when BILLED, the charge it was decided on. */
function billingDecision (ctx: RequestContext, outcome: Outcome, usage: Usage | null): { status: BillingStatus, charge: bigint } {
  const hold = holdOf(ctx)
  if (!hold) return NOT_BILLED
  if (outcome.kind === 'refused' || outcome.kind === 'upstream_error') return NOT_BILLED
  if (outcome.httpStatus >= 400) return NOT_BILLED
  // The provider broke its answer before producing anything: nothing was delivered to bill.
  if (outcome.kind === 'stream_interrupted' && !producedOutput(usage)) return NOT_BILLED
  if (JOB_OPERATIONS.has(ctx.plan.operation)) return { status: 'PENDING', charge: 0n }
  const charge = chargeFor(outcome, usage)
  return charge > 0n ? { status: 'BILLED', charge } : NOT_BILLED
}

/** The status a broken stream's `event: error` frame announces: the one its settle will apply. */
export function interruptedStreamBilling (ctx: RequestContext, answered: CompiledModel | null, usage: Usage): BillingStatus {
  return billingStatusFor(ctx, {
    kind: 'stream_interrupted',
    httpStatus: 200,
    errorCode: 'PROVIDER_STREAM_INTERRUPTED',
    answeredModel: answered,
    upstreamMs: null,
    usage,
    overheadMs: null
  }, usage)
}

/**
 * A poll that sees its job ended settles the job's hold: the job's price when it completed,
 * nothing when it failed. Only one poll ever takes the hold (the job row is removed with it).
 */
async function settleJobFromPoll (deps: SettleDeps, ctx: RequestContext, outcome: Outcome): Promise<Settled> {
  const status = outcome.job?.status
  if (outcome.httpStatus >= 400 || (status !== 'completed' && status !== 'failed')) return NOTHING
  const id = outcome.job?.id ?? ctx.params.id
  const taken = id === undefined ? null : await deps.jobs.take(`${JOB_KIND[ctx.plan.operation] ?? ''}:${id}`)
  if (!taken) return NOTHING
  const base = { held: null, holdId: taken.holdId }
  const model = deps.models.get(taken.modelId)
  if (status === 'failed' || !model) {
    await withRetry(async () => await deps.ledger.release(taken.holdId))
    return { ...base, billing: 'NOT_BILLED', cost: 0n, postingId: null, capped: false }
  }
  const r = await withRetry(async () => await deps.ledger.settle({ holdId: taken.holdId, amount: costOf(model.price, ONE_JOB), requestId: ctx.requestId }))
  return { ...base, billing: r.posted > 0n ? 'BILLED' : 'NOT_BILLED', cost: r.posted, postingId: `post:${taken.holdId}`, capped: r.capped }
}

/**
 * Posts what the upstream produced (never more than was held) and releases the rest, exactly
 * once per request. Refused requests, upstream errors and upstream 4xx answers release the
 * whole hold. An accepted job keeps its hold until a poll sees the job end.
 */
export async function settle (deps: SettleDeps, ctx: RequestContext, outcome: Outcome, usage: Usage | null): Promise<Settled> {
  if (JOB_POLLS.has(ctx.plan.operation)) return await settleJobFromPoll(deps, ctx, outcome)
  const { ledger } = deps
  const hold = holdOf(ctx)
  if (!hold || hold.closed) return NOTHING
  deps.keeper?.drop(hold.holdId)
  const base = { held: hold.amount, holdId: hold.holdId }
  const { status, charge } = billingDecision(ctx, outcome, usage)
  if (status === 'PENDING') {
    hold.closed = true
    const jobId = outcome.job?.id
    if (jobId === undefined || !outcome.answeredModel) {
      // An accepted job whose id could not be read can never be matched to its end: release.
      await withRetry(async () => await ledger.release(hold.holdId))
      return { ...base, billing: 'NOT_BILLED', cost: 0n, postingId: null, capped: false }
    }
    await withRetry(async () => await deps.jobs.record({
      jobRef: `${JOB_KIND[ctx.plan.operation] ?? ''}:${jobId}`,
      holdId: hold.holdId,
      accountId: hold.accountId,
      modelId: outcome.answeredModel?.id ?? hold.model.id,
      createdAt: deps.clock.now()
    }))
    return { ...base, billing: 'PENDING', cost: null, postingId: null, capped: false }
  }
  hold.closed = true
  if (status === 'NOT_BILLED') {
    await withRetry(async () => await ledger.release(hold.holdId))
    return { ...base, billing: 'NOT_BILLED', cost: 0n, postingId: null, capped: false }
  }
  const r = await withRetry(async () => await ledger.settle({ holdId: hold.holdId, amount: charge, requestId: ctx.requestId }))
  // Nothing posted (the hold had expired): there is no posting for the row to name.
  return { ...base, billing: r.posted > 0n ? 'BILLED' : 'NOT_BILLED', cost: r.posted, postingId: r.posted > 0n ? `post:${hold.holdId}` : null, capped: r.capped }
}
