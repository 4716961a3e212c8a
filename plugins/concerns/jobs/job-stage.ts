import { authOf } from '../auth/index.js'
import { gatewayError, type GatewayError } from '../../foundation/errors/index.js'
import type { RequestContext } from '../../foundation/pipeline/context.js'
import type { JobRecord, JobStore } from '../../foundation/store/jobs/types.js'
import type { JobChecker } from './job-checker.js'
import { isJobId } from './job-id.js'
import { jobKindOf } from './job-kinds.js'
import { endJob, type SettleJobDeps } from './settle-job.js'

declare module '../../foundation/pipeline/context.js' {
  interface RequestState {
    /** The job a poll or download names, owned by the caller (set at admission). */
    job: JobRecord
  }
}

/** The job a poll or download names, once admission found it owned by the caller. */
export function jobOf (ctx: RequestContext): JobRecord | undefined {
  return ctx.state.job
}

/**
 * The one answer for a job id the caller cannot see: malformed, unknown, or another account's.
 * The three are indistinguishable on purpose (same code, status, message and timing class: no
 * upstream call is made for any of them). The catalogue has no job-not-found code; like the
 * admin API's missing account, it is REQUEST_ROUTE_NOT_FOUND (404) with `param: id`.
 */
export function jobNotFound (): GatewayError {
  return gatewayError('REQUEST_ROUTE_NOT_FOUND', { param: 'id', detail: 'No job with this id exists for this account.' })
}

export interface JobStageDeps extends SettleJobDeps {
  jobs: JobStore
  checker: JobChecker
}

/**
 * Content of a job not yet ended: a download must not be a way around billing, so the job's
 * status is asked of its provider first and a completed job is billed before its bytes flow.
 */
async function readyForContent (deps: JobStageDeps, job: JobRecord): Promise<void> {
  if (job.state === 'completed') return
  if (job.state !== 'pending') throw gatewayError('REQUEST_INVALID', { param: 'id', detail: `The job ended without content (${job.state}).` })
  const check = await deps.checker.check(job)
  if (check.kind === 'gone') {
    await endJob(deps, job, 'expired', 'not_found')
    throw jobNotFound()
  }
  if (check.kind === 'unknown') throw gatewayError('UPSTREAM_ERROR')
  const { end, status } = check.observation
  if (end === 'running') throw gatewayError('REQUEST_INVALID', { param: 'id', detail: 'The job has not finished; poll it until its status is completed, then download.' })
  await endJob(deps, job, end, status)
  if (end === 'failed') throw gatewayError('REQUEST_INVALID', { param: 'id', detail: 'The job failed; it has no content.' })
}

/**
 * Admit phase of job polls and downloads (after auth): the id must have the gateway's shape and
 * name a job of the caller's account. Runs before anything is sent upstream.
 */
export function admitJob (deps: JobStageDeps): (ctx: RequestContext) => Promise<void> {
  return async (ctx) => {
    const job = ctx.plan.op.job?.role
    if (job !== 'poll' && job !== 'content') return
    const auth = authOf(ctx)
    if (!auth || !isJobId(ctx.params.id)) throw jobNotFound()
    const found = await deps.jobs.getOwned(ctx.params.id, auth.account.id)
    // A job of another kind (a music id on the video route) is as unknown as a missing one.
    if (!found || found.kind !== jobKindOf(ctx.plan.op)) throw jobNotFound()
    if (job === 'content') await readyForContent(deps, found)
    ctx.state.job = found
  }
}
