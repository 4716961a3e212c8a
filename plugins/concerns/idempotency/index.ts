import type { FastifyBaseLogger } from 'fastify'
import { gatewayError, type ErrorCode } from '../../foundation/errors/index.js'
import type { RequestContext } from '../../foundation/pipeline/context.js'
import type { GatewayPlugin } from '../../foundation/pipeline/plugin.js'
import type { ClaimStatus, IdempotencyClaim, IdempotencyOriginal, IdempotencyStore } from '../../foundation/store/idempotency/types.js'
import { fingerprintOf } from './fingerprint.js'
import { readIdempotencyKey } from './header.js'

export { canonicalJson, bodyDigest, fingerprintOf } from './fingerprint.js'
export { readIdempotencyKey, IDEMPOTENCY_HEADER, MAX_KEY_LENGTH } from './header.js'

/** A running request's claim is a lease this long, renewed every third of it while the request lives. */
export const IDEMPOTENCY_LEASE_MS = 60_000
/** A key stays used this long after its request ended. */
export const IDEMPOTENCY_RETENTION_MS = 24 * 3600_000
/** How often each instance deletes the keys whose retention ended. */
export const IDEMPOTENCY_SWEEP_INTERVAL_MS = 10 * 60_000

/** Attempts to record the end of a request under a key (a database hiccup must not free a key that ran). */
const END_ATTEMPTS = 3
const END_RETRY_MS = 200

export interface IdempotencyState {
  /** The client's key, validated at admission. */
  key: string
  /** Set once this request holds the key (from the charge phase on). */
  claim: IdempotencyClaim | null
}

declare module '../../foundation/pipeline/context.js' {
  interface RequestState {
    /** The request's `X-Idempotency-Key` and its claim. */
    idempotency: IdempotencyState
  }
}

export interface IdempotencyDeps {
  store: IdempotencyStore
  leaseMs?: number
  retentionMs?: number
  sweepIntervalMs?: number
}

const REFUSAL: Readonly<Record<Exclude<ClaimStatus, 'claimed'>, ErrorCode>> = {
  conflict: 'REQUEST_IDEMPOTENCY_CONFLICT',
  in_progress: 'REQUEST_IDEMPOTENCY_IN_PROGRESS',
  completed: 'REQUEST_IDEMPOTENCY_REPLAY_UNAVAILABLE'
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => { setTimeout(resolve, ms) })

/**
 * The refusal of a retry, naming what the client can look up instead of paying again: the
 * original request (its request log row) and, when that request created a job, the job to poll.
 */
function refusal (status: Exclude<ClaimStatus, 'claimed'>, original: IdempotencyOriginal | null): Error {
  if (original === null || status === 'conflict') return gatewayError(REFUSAL[status])
  const job = original.jobId === null ? '' : ` It created job ${original.jobId}: poll it instead of creating another.`
  return gatewayError(REFUSAL[status], {
    detail: `The request that used this key is ${original.requestId}.${job}`,
    fields: { original_request_id: original.requestId, ...(original.jobId === null ? {} : { job_id: original.jobId }) }
  })
}

/** The idempotency concern: its phases, and the hook plugins/concerns/jobs calls once a create's job is recorded. */
export interface IdempotencyPlugin extends GatewayPlugin {
  /** Links the request's key to the job it created (before the client sees the job's id); never throws. */
  jobCreated (ctx: RequestContext, jobId: string): Promise<void>
}

/**
 * `X-Idempotency-Key`, scoped to the account.
 * admit:  validates the header (1–255 printable ASCII characters, sent once) → REQUEST_INVALID.
 * charge: claims the key (atomic in the database) with a fingerprint of route, model and
 *         canonical body; listed before the wallet, so a duplicate is refused (in progress,
 *         replay unavailable, conflict) before it holds anything or reaches the upstream.
 *         A fallback keeps the claim of its request.
 * settle: a request refused before it ran (outcome `refused`: a later charge hook such as the
 *         wallet, or a refusal of the forward phase before any upstream call) releases the key;
 *         any other end (answered, upstream error, cut stream, client gone) keeps it used for
 *         the retention, naming the job the request created.
 * jobs:   a job create's key names its job as soon as the job is recorded (jobCreated), so a
 *         client that lost the answer learns the job's id from its retry's refusal.
 * A refused retry names the request that holds the key (`original_request_id`) and its job
 * (`job_id`), in the message and as fields of the family's envelope.
 * While a request runs its claim is renewed every third of the lease; a crashed instance's
 * claims lapse at most one lease after its last renewal. Every instance purges expired keys.
 */
export function idempotencyPlugin (deps: IdempotencyDeps): IdempotencyPlugin {
  const { store } = deps
  const leaseMs = deps.leaseMs ?? IDEMPOTENCY_LEASE_MS
  const retentionMs = deps.retentionMs ?? IDEMPOTENCY_RETENTION_MS
  const sweepIntervalMs = deps.sweepIntervalMs ?? IDEMPOTENCY_SWEEP_INTERVAL_MS
  /** Owners of the claims this instance holds: one renewal statement covers them all. */
  const live = new Set<string>()
  const timers: NodeJS.Timeout[] = []
  let log: FastifyBaseLogger | null = null

  const renew = (): void => {
    if (live.size === 0) return
    store.renew([...live], leaseMs).catch((err: unknown) => log?.error({ err }, 'idempotency lease renewal failed'))
  }
  const sweep = (): void => {
    store.purge().then(
      (n) => { if (n > 0) log?.info({ purged: n }, 'purged expired idempotency keys') },
      (err: unknown) => log?.error({ err }, 'idempotency key sweep failed')
    )
  }
  /** Records the end of a claimed request, retried a few times; the lease bounds a final failure. */
  const end = async (claim: IdempotencyClaim, release: boolean, jobId: string | undefined): Promise<void> => {
    try {
      for (let attempt = 1; ; attempt++) {
        try {
          await (release ? store.release(claim.owner) : store.complete(claim.owner, retentionMs, jobId))
          return
        } catch (err) {
          if (attempt >= END_ATTEMPTS) throw err
          await sleep(END_RETRY_MS * attempt)
        }
      }
    } finally {
      live.delete(claim.owner)
    }
  }

  /** Takes the key for this request or refuses it with what the key's row says. */
  const claimKey = async (state: IdempotencyState, claim: IdempotencyClaim): Promise<void> => {
    // A database that cannot take the claim fails the request (retryable) rather than run it unprotected.
    const status = await store.claim(claim, leaseMs)
    if (status !== 'claimed') {
      // Read after the refused claim: the row may have changed hands since (then it is not named).
      const original = status === 'conflict' ? null : await store.original(claim.accountId, claim.key).catch(() => null)
      throw refusal(status, original)
    }
    state.claim = claim
    live.add(claim.owner)
  }

  const plugin: IdempotencyPlugin = {
    name: 'idempotency',
    // A GET (job polls, content) changes nothing: no key is read, claimed or released there.
    forRoute: (route) => route.method === 'GET' ? {} : plugin,
    setup (app) {
      log = app.log
      const renewer = setInterval(renew, Math.max(1, Math.floor(leaseMs / 3)))
      const sweeper = setInterval(sweep, sweepIntervalMs)
      renewer.unref()
      sweeper.unref()
      timers.push(renewer, sweeper)
    },
    admit (ctx, req) {
      // Reads (job polls, content) change nothing: there is nothing to make safe to retry.
      if (ctx.plan.method === 'GET') return
      const read = readIdempotencyKey(req.raw.rawHeaders)
      if (read.kind === 'absent') return
      if (read.kind === 'invalid') throw gatewayError('REQUEST_INVALID', { detail: read.detail })
      ctx.state.idempotency = { key: read.key, claim: null }
    },
    // Not async: a request without a key costs no promise in either phase.
    charge (ctx) {
      const state = ctx.state.idempotency
      const auth = ctx.state.auth
      // No key, or a fallback of a request that already holds its key.
      if (state === undefined || state.claim !== null || auth === undefined) return
      return claimKey(state, {
        accountId: auth.account.id,
        key: state.key,
        fingerprint: fingerprintOf({ routeId: ctx.plan.id, model: ctx.requestedModelId, body: ctx.body }),
        owner: ctx.requestId
      })
    },
    settle (ctx, outcome) {
      const claim = ctx.state.idempotency?.claim
      if (claim === undefined || claim === null) return
      return end(claim, outcome.kind === 'refused', outcome.job?.id)
    },
    async jobCreated (ctx, jobId) {
      const claim = ctx.state.idempotency?.claim
      if (claim === undefined || claim === null) return
      try {
        await store.linkJob(claim.owner, jobId, retentionMs)
      } catch (err) {
        // The job exists and is billed: failing its create now would hide it. The settle's
        // complete records the job id again (or the lease ends the claim).
        log?.error({ err, requestId: ctx.requestId, jobId }, 'linking the idempotency key to its job failed')
      }
    },
    async close () {
      for (const timer of timers) clearInterval(timer)
      timers.length = 0
    }
  }
  return plugin
}
