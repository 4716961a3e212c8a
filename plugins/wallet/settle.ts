import type { BillingStatus } from '../errors/index.js'
import type { Outcome, RequestContext } from '../pipeline/context.js'
import { costOf } from '../pricing/cost.js'
import type { Usage } from '../pricing/usage-types.js'
import type { ModelCatalogue } from '../models/catalogue.js'
import type { Clock } from '../store/clock.js'
import type { LedgerStore, SettleResult } from '../store/ledger/types.js'
import type { HoldKeeper } from './hold-renewal.js'
import { holdOf } from './hold.js'
import { withLedgerRetry } from '../store/ledger/retry.js'

export interface SettleDeps {
  ledger: LedgerStore
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
}

const NOTHING: Settled = { billing: 'NOT_BILLED', cost: null, held: null, holdId: null, postingId: null, overage: null }
const NOT_BILLED = { status: 'NOT_BILLED', charge: 0n } as const

/** The request log marks an overage only when there was one. */
const overageOf = (r: SettleResult): bigint | null => r.overage > 0n ? r.overage : null

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
  if (ctx.plan.op.job?.role === 'create') return { status: 'PENDING', charge: 0n }
  const charge = chargeFor(outcome, usage)
  return charge > 0n ? { status: 'BILLED', charge } : NOT_BILLED
}

/**
 * Posts what the upstream produced and releases the rest of the hold, exactly once per
 * request. A charge above the hold (usage the worst case could not see, e.g. media fetched by
 * URL) is posted in full; the part above the hold is the overage the request log marks.
 * Refused requests, upstream errors and upstream 4xx answers release the whole hold. An
 * accepted job keeps its hold: plugins/jobs recorded it with the job, and settles it once the
 * job ends (a poll, a download or the watcher sees it).
 */
export async function settle (deps: SettleDeps, ctx: RequestContext, outcome: Outcome, usage: Usage | null): Promise<Settled> {
  const { ledger } = deps
  const hold = holdOf(ctx)
  if (!hold || hold.closed) return NOTHING
  deps.keeper?.drop(hold.holdId)
  const base = { held: hold.amount, holdId: hold.holdId }
  const { status, charge } = billingDecision(ctx, outcome, usage)
  if (status === 'PENDING') {
    hold.closed = true
    if (outcome.job?.id === undefined) {
      // An accepted job that plugins/jobs did not record can never be matched to its end: release.
      await withLedgerRetry(async () => await ledger.release(hold.holdId))
      return { ...base, billing: 'NOT_BILLED', cost: 0n, postingId: null, overage: null }
    }
    return { ...base, billing: 'PENDING', cost: null, postingId: null, overage: null }
  }
  hold.closed = true
  if (status === 'NOT_BILLED') {
    await withLedgerRetry(async () => await ledger.release(hold.holdId))
    return { ...base, billing: 'NOT_BILLED', cost: 0n, postingId: null, overage: null }
  }
  // An estimate is the gateway's own count of text it saw, which the hold already bounds (output
  // up to the max tokens held for, input up to one token per body byte): where it comes out
  // higher, the estimate is off, not the usage. Only a provider's report is posted as an overage.
  const amount = usage !== null && !usage.reported && charge > hold.amount ? hold.amount : charge
  const r = await withLedgerRetry(async () => await ledger.settle({ holdId: hold.holdId, amount, requestId: ctx.requestId }))
  // Nothing posted (the hold had expired): there is no posting for the row to name.
  return { ...base, billing: r.posted > 0n ? 'BILLED' : 'NOT_BILLED', cost: r.posted, postingId: r.posted > 0n ? `post:${hold.holdId}` : null, overage: overageOf(r) }
}
