import type { Clock } from '../store/clock.js'
import type { JobRecord, JobState, JobStore } from '../store/jobs/types.js'
import type { LedgerStore } from '../store/ledger/types.js'
import { withLedgerRetry } from '../store/ledger/retry.js'

export interface SettleJobDeps {
  jobs: JobStore
  ledger: LedgerStore
  clock: Clock
}

export interface JobEnd {
  /** True when this call ended the job (and so wrote its ledger entry). */
  ended: boolean
  /** What the ledger posted: the locked price once, 0 for a failed or expired job. */
  posted: bigint
}

/**
 * Ends a pending job once, whoever sees its end first (a client's poll, a download, the watcher
 * of any instance): the job row moves out of `pending` in one conditional UPDATE, and only the
 * caller that moved it touches the ledger. Completed posts the price locked at submit; failed
 * and expired release the hold. The ledger is exactly-once per hold as well, so even a second
 * writer could not post twice.
 */
export async function endJob (deps: SettleJobDeps, job: JobRecord, state: Exclude<JobState, 'pending'>, upstreamStatus: string | null): Promise<JobEnd> {
  const moved = await deps.jobs.finish(job.id, state, upstreamStatus, deps.clock.now())
  if (!moved) return { ended: false, posted: 0n }
  if (state !== 'completed') {
    await withLedgerRetry(async () => await deps.ledger.release(moved.holdId))
    return { ended: true, posted: 0n }
  }
  const r = await withLedgerRetry(async () => await deps.ledger.settle({ holdId: moved.holdId, amount: moved.price, requestId: moved.requestId, note: `job ${moved.id}` }))
  return { ended: true, posted: r.posted }
}
