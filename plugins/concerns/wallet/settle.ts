import type { BillingStatus } from '../../foundation/errors/index.js'
import type { Outcome, RequestContext } from '../../foundation/pipeline/context.js'
import { costOf } from '../../foundation/pricing/cost.js'
import type { ModelCatalogue } from '../models/catalogue.js'
import type { Clock } from '../../foundation/store/clock.js'
import type { SettleResult } from '../../foundation/store/ledger/types.js'
import type { HoldKeeper } from './hold-renewal.js'
import { holdOf, type RequestHold } from './hold.js'
import type { HoldCloser } from './wallet.js'
import type { Usage } from '../../foundation/shapes/index.js'

export interface SettleDeps {
  /** Posts or releases the request's hold (and reports an unrecovered overage). */
  wallet: HoldCloser
  models: ModelCatalogue
  clock: Clock
  /** Stops the renewal of a hold once it is settled (see hold-renewal). */
  keeper?: HoldKeeper
}

export interface Settled {
  billing: BillingStatus
  cost: bigint | null
  held: bigint | null
  holdId: string | null
  postingId: string | null
  /** The part of `cost` above the hold, posted all the same (null when the charge fit in the hold). */
  overage: bigint | null
  /** The part of the reported cost beyond the account's bound, not posted (null when none). */
  unrecovered: bigint | null
}

const NOTHING: Settled = { billing: 'NOT_BILLED', cost: null, held: null, holdId: null, postingId: null, overage: null, unrecovered: null }
const NOT_BILLED = { status: 'NOT_BILLED', charge: 0n } as const

/**
 * A settle's result for `hold`: one literal of every field, so every result has one shape (a
 * shared part spread into it, with the rest added after, took V8's slow path: 10 µs a request
 * at 50 connections, 2026-11-27).
 */
function settledOf (hold: RequestHold, billing: BillingStatus, cost: bigint | null, postingId: string | null = null, overage: bigint | null = null, unrecovered: bigint | null = null): Settled {
  return { held: hold.amount, holdId: hold.holdId, billing, cost, postingId, overage, unrecovered }
}

/** The request log marks an overage only when there was one. */
const overageOf = (r: SettleResult): bigint | null => r.overage > 0n ? r.overage : null
const unrecoveredOf = (r: SettleResult): bigint | null => r.unrecovered > 0n ? r.unrecovered : null

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
  // An upstream refusal (4xx) is not billed; a client that left a non-streamed answer before it
  // came (499: nothing sent) is billed its estimate, as one that left a stream before any output.
  if (outcome.httpStatus >= 400 && outcome.kind !== 'client_disconnected') return NOT_BILLED
  // The provider broke its answer before producing anything: nothing was delivered to bill.
  if (outcome.kind === 'stream_interrupted' && !producedOutput(usage)) return NOT_BILLED
  if (ctx.plan.op.job?.role === 'create') return { status: 'PENDING', charge: 0n }
  const charge = chargeFor(outcome, usage)
  return charge > 0n ? { status: 'BILLED', charge } : NOT_BILLED
}

/**
 * Posts what the upstream produced and releases the rest of the hold, exactly once per
 * request. A charge above the hold (usage the worst case could not see, e.g. media fetched by
 * URL) is posted down to the account's bound: the part above the hold is the overage the
 * request log marks, the part beyond the bound the unrecovered loss it marks too.
 * Refused requests, upstream errors and upstream 4xx answers release the whole hold. An
 * accepted job keeps its hold: plugins/concerns/jobs recorded it with the job, and settles it once the
 * job ends (a poll, a download or the watcher sees it).
 */
export async function settle (deps: SettleDeps, ctx: RequestContext, outcome: Outcome, usage: Usage | null): Promise<Settled> {
  const hold = holdOf(ctx)
  if (!hold || hold.closed) return NOTHING
  deps.keeper?.drop(hold.holdId)
  const { status, charge } = billingDecision(ctx, outcome, usage)
  if (status === 'PENDING') {
    hold.closed = true
    if (outcome.job?.id === undefined) {
      // An accepted job that plugins/concerns/jobs did not record can never be matched to its end: release.
      await deps.wallet.release(hold.holdId)
      return settledOf(hold, 'NOT_BILLED', 0n)
    }
    return settledOf(hold, 'PENDING', null)
  }
  hold.closed = true
  if (status === 'NOT_BILLED') {
    await deps.wallet.release(hold.holdId)
    return settledOf(hold, 'NOT_BILLED', 0n)
  }
  // An estimate is the gateway's own count of text it saw, which the hold already bounds (output
  // up to the max tokens held for, input up to one token per body byte): where it comes out
  // higher, the estimate is off, not the usage. Only a provider's report is posted as an overage.
  const amount = usage !== null && !usage.reported && charge > hold.amount ? hold.amount : charge
  const model = outcome.answeredModel?.id
  // The answer was sent: the charge may share the next request's commit (lazy).
  const r = await deps.wallet.post({ holdId: hold.holdId, amount, requestId: ctx.requestId, model, lazy: true })
  // Nothing posted nor left unrecovered: the hold had expired, there is no posting to name.
  const charged = r.posted > 0n || r.unrecovered > 0n
  return settledOf(hold, charged ? 'BILLED' : 'NOT_BILLED', r.posted, charged ? `post:${hold.holdId}` : null, overageOf(r), unrecoveredOf(r))
}
