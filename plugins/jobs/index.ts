// Asynchronous jobs (video, music, generative-content operations), owned by their account and
// billed once when they succeed, whether or not anyone polls. The host calls these entry points:
//   stage              admit: a poll's or download's job id is the caller's (else not-found)
//   upstreamTarget     forward: the job's own provider and upstream path (no client query)
//   answers / answer   forward: a create's or poll's answer (record, settle, id rewrite)
//   watcher            background: finishes jobs nobody polls (start/stop with the server)
import type { FastifyBaseLogger } from 'fastify'
import type { GatewayConfig } from '../config/types.js'
import { gatewayError } from '../errors/index.js'
import type { RequestContext } from '../pipeline/context.js'
import type { GatewayPlugin } from '../pipeline/plugin.js'
import type { Clock, IdSource } from '../store/clock.js'
import type { JobStore } from '../store/jobs/types.js'
import type { LedgerStore } from '../store/ledger/types.js'
import { openUpstreams, type UpstreamPlan, type Upstreams } from '../upstream/providers.js'
import type { UnrecoveredReporter } from '../wallet/post.js'
import { answerJob, type JobAnswered, type JobAnswerInput, type JobCreatedHook } from './job-answer.js'
import { createJobChecker } from './job-checker.js'
import type { JobRoutes } from './job-routes.js'
import { admitJob, jobOf } from './job-stage.js'
import { createJobWatcher, type JobWatcher } from './watcher.js'

export type { JobAnswered, JobAnswerInput, JobCreatedHook } from './job-answer.js'
export type { JobWatcher, WatchRound } from './watcher.js'
export { JOB_ID, isJobId } from './job-id.js'

/** The jobs concern's slice of the gateway's plan. */
export interface JobsPlanSlice {
  readonly config: Pick<GatewayConfig, 'providers' | 'jobs'>
  /** Where each job kind is polled and downloaded (compileJobRoutes). */
  readonly jobs: JobRoutes
  readonly upstream: UpstreamPlan
}

export interface JobsDeps {
  plan: JobsPlanSlice
  jobs: JobStore
  ledger: LedgerStore
  clock: Clock
  log: FastifyBaseLogger
  ids?: IdSource
  /** The gateway's upstreams (the forward phase's pools); default opened from the plan (and closed by close()). */
  upstreams?: Upstreams
  /** Hook point after a job is recorded (the idempotency concern's; see JobCreatedHook). */
  onCreated?: JobCreatedHook
  /** Told about a job settle that left a cost unrecovered (the wallet's reporter). */
  onUnrecovered?: UnrecoveredReporter
}

export interface Jobs {
  /** Admission of job polls and downloads (after auth): the id names a job of the caller's account. */
  readonly admit: (ctx: RequestContext) => Promise<void>
  /** Where a job poll or download goes: the job's provider and upstream path; null for other routes; MODEL_UNAVAILABLE (legacy UPSTREAM_POOL_UNAVAILABLE) when that provider left the config. */
  upstreamTarget (ctx: RequestContext): { provider: string, path: string } | null
  /** True for the routes whose answer `answer` writes (job creates and polls). */
  answers (ctx: RequestContext): boolean
  answer (input: JobAnswerInput): Promise<JobAnswered>
  readonly watcher: JobWatcher
  close (): Promise<void>
}

export function createJobs (deps: JobsDeps): Jobs {
  const { config, jobs: routes } = deps.plan
  const ownUpstreams = deps.upstreams === undefined
  const upstreams = deps.upstreams ?? openUpstreams(deps.plan.upstream)
  const checker = createJobChecker(upstreams, routes)
  const providerExists = (name: string): boolean => Object.prototype.hasOwnProperty.call(config.providers, name)
  const settleDeps = { jobs: deps.jobs, ledger: deps.ledger, clock: deps.clock, onUnrecovered: deps.onUnrecovered }
  const watcher = createJobWatcher({ ...settleDeps, checker, config: config.jobs, log: deps.log })
  const answerDeps = {
    ...settleDeps,
    firstCheckMs: config.jobs.watcher.first_check_ms,
    ...(deps.ids ? { ids: deps.ids } : {}),
    ...(deps.onCreated ? { onCreated: deps.onCreated } : {})
  }
  return {
    admit: admitJob({ ...settleDeps, checker }),
    upstreamTarget (ctx) {
      const job = jobOf(ctx)
      const what = ctx.plan.op.job?.role
      if (!job || (what !== 'poll' && what !== 'content')) return null
      const path = routes.upstreamPath(job.kind, what, job.upstreamId)
      // A job stays with the provider that runs it; one removed from the config since cannot answer.
      if (path === undefined || !providerExists(job.provider)) throw gatewayError('MODEL_UNAVAILABLE')
      return { provider: job.provider, path }
    },
    answers: (ctx) => ctx.plan.op.job?.role === 'create' || ctx.plan.op.job?.role === 'poll',
    answer: async (input) => await answerJob(answerDeps, input),
    watcher,
    async close () {
      await watcher.stop()
      if (ownUpstreams) await upstreams.close()
    }
  }
}

/**
 * admit: a job poll or download names a job of the caller's account (else the not-found of a
 * missing id); a download of a job not yet known to be finished is settled first. setup starts
 * the watcher (when `watch`), close stops it. The forward phase asks `Jobs` where job routes go
 * and lets it write their answers.
 */
export function jobsPlugin (jobs: Jobs, opts: { watch: boolean }): GatewayPlugin {
  return {
    name: 'jobs',
    setup () {
      if (opts.watch) jobs.watcher.start()
    },
    admit: jobs.admit,
    // Only a job poll or download names a job to admit.
    forRoute: (route) => route.op.job?.role === 'poll' || route.op.job?.role === 'content' ? { admit: jobs.admit } : {},
    close: async () => { await jobs.close() }
  }
}
