// Asynchronous jobs (video, music, generative-content operations), owned by their account and
// billed once when they succeed, whether or not anyone polls. Entry points:
//   admit              admit phase: a poll's or download's job id is the caller's (else not-found)
//   translatorFor      forward, through the upstream plugin's translator lookup: a poll or
//                      download goes to the job's own provider (no client query); a create's
//                      or poll's answer is read here (record, settle, id rewrite)
//   watcher            background: finishes jobs nobody polls (start/stop with the server)
// A job's hold is the wallet's (created by the charge phase); jobs record it and end it through
// the wallet's post or release, and reach providers through the reader they are given: they
// import nothing of plugins/concerns/upstream, which knows them only as a translator.
import type { FastifyBaseLogger } from 'fastify'
import type { GatewayConfig } from '../../foundation/config/types.js'
import { gatewayError } from '../../foundation/errors/index.js'
import type { Translator, TranslatorFor, UpstreamTarget } from '../metering/index.js'
import type { RequestContext } from '../../foundation/pipeline/context.js'
import type { GatewayPlugin } from '../../foundation/pipeline/plugin.js'
import type { Clock, IdSource } from '../../foundation/store/clock.js'
import type { JobStore } from '../../foundation/store/jobs/types.js'
import type { HoldCloser } from '../wallet/index.js'
import { answerJob, type JobAnswered, type JobAnswerInput, type JobCreatedHook } from './job-answer.js'
import { createJobChecker, type ProviderReader } from './job-checker.js'
import type { JobRoutes } from './job-routes.js'
import { admitJob, jobOf } from './job-stage.js'
import { createJobWatcher, type JobWatcher } from './watcher.js'

export type { JobAnswered, JobAnswerInput, JobCreatedHook } from './job-answer.js'
export type { ProviderReader } from './job-checker.js'
export type { JobWatcher, WatchRound } from './watcher.js'
export { JOB_ID, isJobId } from './job-id.js'

/** The jobs concern's slice of the gateway's plan. */
export interface JobsPlanSlice {
  readonly config: Pick<GatewayConfig, 'providers' | 'jobs'>
  /** Where each job kind is polled and downloaded (compileJobRoutes). */
  readonly jobs: JobRoutes
}

export interface JobsDeps {
  plan: JobsPlanSlice
  jobs: JobStore
  /** Where a job's hold ends: posted when it completes, released when it fails or expires. */
  wallet: HoldCloser
  clock: Clock
  log: FastifyBaseLogger
  ids?: IdSource
  /** How the watcher and a download's check reach a job's provider (closed by close()). */
  reader: ProviderReader
  /** Hook point after a job is recorded (the idempotency concern's; see JobCreatedHook). */
  onCreated?: JobCreatedHook
}

export interface Jobs {
  /** Admission of job polls and downloads (after auth): the id names a job of the caller's account. */
  readonly admit: (ctx: RequestContext) => Promise<void>
  /**
   * The translators of the job operations over `base` (the request edits and meter of every
   * call), built once: a create's and a poll's answer are written here; a poll and a download
   * go to the job's own provider and upstream path (MODEL_UNAVAILABLE, legacy
   * UPSTREAM_POOL_UNAVAILABLE, when that provider left the config). Every other operation: `base`.
   */
  translatorFor (base: Translator): TranslatorFor
  readonly watcher: JobWatcher
  close (): Promise<void>
}

export function createJobs (deps: JobsDeps): Jobs {
  const { config, jobs: routes } = deps.plan
  const checker = createJobChecker(deps.reader, routes)
  const providerExists = (name: string): boolean => Object.prototype.hasOwnProperty.call(config.providers, name)
  const settleDeps = { jobs: deps.jobs, wallet: deps.wallet, clock: deps.clock }
  const watcher = createJobWatcher({ ...settleDeps, checker, config: config.jobs, log: deps.log })
  const answerDeps = {
    ...settleDeps,
    firstCheckMs: config.jobs.watcher.first_check_ms,
    ...(deps.ids ? { ids: deps.ids } : {}),
    ...(deps.onCreated ? { onCreated: deps.onCreated } : {}),
    warn: (fields: { requestId: string, jobId: string, err: unknown }, message: string) => { deps.log.warn(fields, message) }
  }
  const target = (ctx: RequestContext): UpstreamTarget | null => {
    const job = jobOf(ctx)
    const what = ctx.plan.op.job?.role
    if (!job || (what !== 'poll' && what !== 'content')) return null
    const path = routes.upstreamPath(job.kind, what, job.upstreamId)
    // A job stays with the provider that runs it; one removed from the config since cannot answer.
    if (path === undefined || !providerExists(job.provider)) throw gatewayError('MODEL_UNAVAILABLE')
    return { provider: job.provider, path }
  }
  const answer = async (input: JobAnswerInput): Promise<JobAnswered> => await answerJob(answerDeps, input)
  return {
    admit: admitJob({ ...settleDeps, checker }),
    translatorFor (base) {
      const create: Translator = { ...base, answer }
      const poll: Translator = { ...base, target, answer }
      // A download streams through the relay and its meter, from the job's provider.
      const content: Translator = { ...base, target }
      return (op) => {
        switch (op.job?.role) {
          case 'create': return create
          case 'poll': return poll
          case 'content': return content
          default: return base
        }
      }
    },
    watcher,
    async close () {
      await watcher.stop()
      await deps.reader.close()
    }
  }
}

/**
 * admit: a job poll or download names a job of the caller's account (else the not-found of a
 * missing id); a download of a job not yet known to be finished is settled first. setup starts
 * the watcher (when `watch`), close stops it. The forward phase reaches jobs only through the
 * translators of `Jobs.translatorFor`, which the composition root hands to the upstream plugin.
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
