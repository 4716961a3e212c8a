import type { Clock } from '../../foundation/store/clock.js'
import type { JobRecord, JobState, JobStore } from '../../foundation/store/jobs/types.js'
import type { HoldCloser } from '../wallet/index.js'

export interface SettleJobDeps {
  jobs: JobStore
  /** The wallet's post and release: a job's hold ends there, like a request's (jobs write no ledger). */
  wallet: HoldCloser
  clock: Clock
}

export interface JobEnd {
  /** True when this call ended the job (and so wrote its ledger entry). */
  ended: boolean
  /** What the ledger posted: the locked price once (down to the account's bound), 0 for a failed or expired job. */
  posted: bigint
}

/**
 * Ends a pending job once, whoever sees its end first (a client's poll, a download, the watcher
 * of any instance): the job row moves out of `pending` in one conditional UPDATE, and only the
 * caller that moved it ends the hold, through the wallet like every hold (the same bounded
 * settle as a request's, its unrecovered part reported by the wallet). Completed posts the
 * price locked at submit; failed and expired release the hold. The ledger is exactly-once per
 * hold as well, so even a second writer could not post twice.
 */
export async function endJob (deps: SettleJobDeps, job: JobRecord, state: Exclude<JobState, 'pending'>, upstreamStatus: string | null): Promise<JobEnd> {
  const moved = await deps.jobs.finish(job.id, state, upstreamStatus, deps.clock.now())
  if (!moved) return { ended: false, posted: 0n }
  if (state !== 'completed') {
    await deps.wallet.release(moved.holdId)
    return { ended: true, posted: 0n }
  }
  const r = await deps.wallet.post({ holdId: moved.holdId, amount: moved.price, requestId: moved.requestId, note: `job ${moved.id}`, jobId: moved.id })
  return { ended: true, posted: r.posted }
}
