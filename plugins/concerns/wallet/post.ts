// The one way a hold ends, for requests and jobs alike: the ledger posts the reported cost up
// to the account's bound and releases the rest, retried on a database error; an unrecovered
// part (the bound reached) is reported once, by the call that posted it.
import type { FastifyBaseLogger } from 'fastify'
import { formatMoney } from '../../foundation/pricing/money.js'
import type { LedgerStore, SettleResult } from '../../foundation/store/ledger/types.js'
import { withLedgerRetry } from '../../foundation/store/ledger/retry.js'

/** A settle whose reported cost went beyond the account's bound. */
export interface UnrecoveredOverage {
  requestId: string
  holdId: string
  /** The asynchronous job whose end this settle is, if any. */
  jobId?: string
  /** The model that answered, when known. */
  model?: string
  /** Nano-units: the cost asked for, what was posted, what was not. */
  reported: bigint
  posted: bigint
  unrecovered: bigint
}

/** Told about each unrecovered overage once (the operator's log line and metric). */
export type UnrecoveredReporter = (overage: UnrecoveredOverage) => void

export interface PostDeps {
  ledger: LedgerStore
  onUnrecovered?: UnrecoveredReporter | undefined
}

export interface PostInput {
  holdId: string
  amount: bigint
  requestId: string
  note?: string
  jobId?: string
  model?: string
  /**
   * Nobody waits on this charge: its answer was sent. The ledger may then commit it with the
   * next request's hold (LedgerStore.settle's `lazy`).
   */
  lazy?: boolean
}

/** Posts a hold's charge (up to the bound) and releases the rest, exactly once. */
export async function postHold (deps: PostDeps, input: PostInput): Promise<SettleResult> {
  const { holdId, amount, requestId } = input
  const lazy = input.lazy === true
  const r = await withLedgerRetry(() => deps.ledger.settle(
    input.note === undefined ? { holdId, amount, requestId, lazy } : { holdId, amount, requestId, note: input.note, lazy }
  ))
  // A retried settle whose first attempt committed answers duplicate, with no unrecovered part:
  // the report comes from the call that posted, never twice.
  if (r.unrecovered > 0n) {
    deps.onUnrecovered?.({
      requestId,
      holdId,
      ...(input.jobId === undefined ? {} : { jobId: input.jobId }),
      ...(input.model === undefined ? {} : { model: input.model }),
      reported: amount,
      posted: r.posted,
      unrecovered: r.unrecovered
    })
  }
  return r
}

/** Releases a whole hold (nothing billed), exactly once. */
export async function releaseHold (deps: PostDeps, holdId: string): Promise<{ released: bigint, duplicate: boolean }> {
  return await withLedgerRetry(() => deps.ledger.release(holdId))
}

/**
 * The operator's side of an unrecovered overage: one warn line naming the request (amounts as
 * decimal strings; never the key, the prompt or the account) and the metric.
 */
export function unrecoveredReporter (log: FastifyBaseLogger, count?: (amount: bigint) => void): UnrecoveredReporter {
  return (o) => {
    log.warn({
      requestId: o.requestId,
      holdId: o.holdId,
      ...(o.jobId === undefined ? {} : { jobId: o.jobId }),
      ...(o.model === undefined ? {} : { model: o.model }),
      reported: formatMoney(o.reported),
      posted: formatMoney(o.posted),
      unrecovered: formatMoney(o.unrecovered)
    }, 'unrecovered overage: the provider reported more than the account could pay down to its bound')
    count?.(o.unrecovered)
  }
}
