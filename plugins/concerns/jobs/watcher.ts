import type { JobsConfig } from '../../foundation/config/types.js'
import type { JobRecord } from '../../foundation/store/jobs/types.js'
import type { JobChecker } from './job-checker.js'
import { endJob, type SettleJobDeps } from './settle-job.js'

export interface WatcherLog {
  warn (obj: object, msg: string): void
  error (obj: object, msg: string): void
}

export interface WatcherDeps extends SettleJobDeps {
  checker: JobChecker
  config: JobsConfig
  log: WatcherLog
}

/** What one round did, for tests and logs. */
export interface WatchRound {
  claimed: number
  completed: number
  failed: number
  expired: number
  running: number
  /** Checks that got no usable answer (rescheduled). */
  unknown: number
}

export interface JobWatcher {
  /** One round: claim the due jobs, check each at its provider, end or reschedule it. */
  tick (): Promise<WatchRound>
  /** Starts the background timer (unref'd: it never keeps a process alive). */
  start (): void
  /** Stops the timer and waits for a running round. */
  stop (): Promise<void>
}

/** Delay before the next check of a job checked `checks` times already: doubling, capped. */
export function nextDelayMs (config: JobsConfig['watcher'], checks: number): number {
  const doubled = config.backoff_ms * 2 ** Math.min(checks, 30)
  return Math.min(doubled, config.max_backoff_ms)
}

/**
 * Finishes jobs no client polls. Every instance runs one; a claimed row (claimed_until, taken
 * with SKIP LOCKED on PostgreSQL) is checked by one instance only, and ending a job is a
 * conditional UPDATE, so two watchers (or a watcher and a client's poll) never bill it twice.
 * A job past jobs.max_age_ms, or one its upstream answers 404 for, is expired and its hold
 * released: nothing is billed for a job whose end nobody could observe.
 */
export function createJobWatcher (deps: WatcherDeps): JobWatcher {
  const w = deps.config.watcher
  let timer: NodeJS.Timeout | undefined
  let running: Promise<unknown> | null = null

  const handle = async (job: JobRecord, round: WatchRound): Promise<void> => {
    const now = deps.clock.now()
    if (now.getTime() - job.createdAt.getTime() >= deps.config.max_age_ms) {
      if ((await endJob(deps, job, 'expired', null)).ended) round.expired++
      return
    }
    const check = await deps.checker.check(job)
    if (check.kind === 'gone') {
      if ((await endJob(deps, job, 'expired', 'not_found')).ended) round.expired++
      return
    }
    if (check.kind === 'observed' && check.observation.end !== 'running') {
      const end = await endJob(deps, job, check.observation.end, check.observation.status)
      if (end.ended) round[check.observation.end]++
      return
    }
    if (check.kind === 'unknown') {
      round.unknown++
      deps.log.warn({ job: job.id, reason: check.reason }, 'job check got no usable answer')
    } else {
      round.running++
    }
    const next = new Date(deps.clock.now().getTime() + nextDelayMs(w, job.checks))
    await deps.jobs.reschedule(job.id, next, check.kind === 'observed' ? check.observation.status : null)
  }

  const tick = async (): Promise<WatchRound> => {
    const round: WatchRound = { claimed: 0, completed: 0, failed: 0, expired: 0, running: 0, unknown: 0 }
    const due = await deps.jobs.claimDue(deps.clock.now(), w.claim_ms, w.batch)
    round.claimed = due.length
    await Promise.all(due.map(async (job) => {
      try {
        await handle(job, round)
      } catch (err) {
        // The claim lapses after claim_ms and the job is checked again then.
        deps.log.error({ err, job: job.id }, 'job check failed')
      }
    }))
    return round
  }

  const loop = (): void => {
    timer = setTimeout(() => {
      running = tick().then(
        (r) => { if (r.expired > 0) deps.log.warn({ expired: r.expired }, 'expired jobs the upstream no longer finishes') },
        (err: unknown) => { deps.log.error({ err }, 'job watcher round failed') }
      ).finally(() => {
        running = null
        if (timer !== undefined) loop()
      })
    }, w.interval_ms)
    timer.unref()
  }

  return {
    tick,
    start () {
      if (timer === undefined) loop()
    },
    async stop () {
      const t = timer
      timer = undefined
      if (t !== undefined) clearTimeout(t)
      if (running !== null) await running
    }
  }
}
