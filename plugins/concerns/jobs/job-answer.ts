import { authOf } from '../auth/index.js'
import { gatewayError } from '../../foundation/errors/index.js'
import type { RequestContext } from '../../foundation/pipeline/context.js'
import type { Answered, AnswerInput } from '../metering/index.js'
import { jobUnits } from '../../foundation/operations/index.js'
import { costOf } from '../../foundation/pricing/cost.js'
import type { Clock, IdSource } from '../../foundation/store/clock.js'
import type { JobStore, NewJob } from '../../foundation/store/jobs/types.js'
import { holdOf } from '../wallet/index.js'
import { newJobId } from './job-id.js'
import { jobKindOf, observe, upstreamIdOf, withGatewayId, type JsonObject } from './job-kinds.js'
import { jobNotFound, jobOf } from './job-stage.js'
import { parseObject, readBounded } from './read-json.js'
import { endJob, type SettleJobDeps } from './settle-job.js'
import type { Usage } from '../../foundation/shapes/index.js'

export interface JobAnswerDeps extends SettleJobDeps {
  jobs: JobStore
  clock: Clock
  ids?: IdSource
  /** Delay before the watcher first checks a new job. */
  firstCheckMs: number
  /** See JobsDeps.onCreated. */
  onCreated?: JobCreatedHook
  /** Told when the created hook failed (the create is answered all the same). */
  warn?: (fields: { requestId: string, jobId: string, err: unknown }, message: string) => void
}

/**
 * Called once a job is recorded, before the client sees its id. The hook point of the
 * idempotency concern: it claims `X-Idempotency-Key` before the create is forwarded (a retry
 * never reaches the provider) and can link its record to the job here. A hook that throws is
 * reported and the create answered all the same: the job is recorded and its provider runs it,
 * so it keeps the request's hold and is billed when it ends (failing the create would release
 * the hold of a job that still completes, unbilled).
 */
export type JobCreatedHook = (ctx: RequestContext, job: NewJob) => void | Promise<void>

/** The upstream's answer to a job create or poll, before the client has seen any of it (the translator's input). */
export type JobAnswerInput = AnswerInput

/** What the host's finish (settle, request log) is told about the answer. */
export type JobAnswered = Answered

const ONE_JOB: Usage = { inputTokens: 0, outputTokens: 0, cachedInputTokens: 0, images: 0, audioSeconds: 0, characters: 0, calls: 0, jobs: 1, reported: true }
const NO_USAGE: Usage = { ...ONE_JOB, jobs: 0 }

function send (input: JobAnswerInput, status: number, bytes: Buffer, json: boolean): void {
  const headers: Record<string, string | string[]> = {}
  // The body was rewritten: the upstream's length and encoding no longer describe it.
  for (const [name, value] of Object.entries(input.headers)) {
    if (name !== 'content-length' && name !== 'content-encoding') headers[name] = value
  }
  headers['content-length'] = String(bytes.length)
  if (json) headers['content-type'] = 'application/json'
  input.reply.hijack()
  const res = input.reply.raw
  if (res.destroyed) return
  res.writeHead(status, headers)
  res.end(bytes)
}

/**
 * A job create accepted upstream: the job is recorded (owner, provider, upstream id, price
 * locked at submit, the request's hold) before the client sees the answer, so a poll sent the
 * moment it arrives finds it; the answer carries the gateway's id instead of the upstream's.
 * Nothing is billed yet: the hold stays open until the job ends.
 */
async function answerCreate (deps: JobAnswerDeps, input: JobAnswerInput, answer: JsonObject): Promise<JobAnswered> {
  const { ctx, answered } = input
  const kind = jobKindOf(ctx.plan.op)
  const hold = holdOf(ctx)
  const auth = authOf(ctx)
  if (kind === undefined || !hold || !auth || !answered) throw gatewayError('GATEWAY_INTERNAL_ERROR', { detail: 'job create without its hold' })
  // The job's units (seconds × videos) as held: what it is charged when it completes.
  const units: Usage = { ...ONE_JOB, jobs: jobUnits(ctx.plan.op, ctx.body) }
  const upstreamId = upstreamIdOf(kind, answer)
  // Accepted but unusable (no id, or one we could not safely poll): the host releases the hold.
  if (upstreamId === undefined || answer.error != null) throw gatewayError('UPSTREAM_ERROR')
  const id = newJobId(deps.ids)
  const now = deps.clock.now()
  const job: NewJob = {
    id,
    kind,
    upstreamId,
    accountId: auth.account.id,
    keyId: auth.key.id,
    modelId: answered.id,
    provider: input.provider,
    price: costOf(answered.price, units),
    holdId: hold.holdId,
    requestId: ctx.requestId,
    createdAt: now,
    nextCheckAt: new Date(now.getTime() + deps.firstCheckMs)
  }
  // A provider that answers an id it already gave (for another request) cannot be polled for
  // this one: refused like an unusable answer, so the hold is released and nothing is billed.
  if (!await deps.jobs.create(job)) {
    throw gatewayError('UPSTREAM_ERROR', { detail: 'The provider answered with a job id it had already given to another request.' })
  }
  try {
    await deps.onCreated?.(ctx, job)
  } catch (err) {
    deps.warn?.({ requestId: ctx.requestId, jobId: id, err }, 'a job create\'s created hook failed; the create is answered and the job billed when it ends')
  }
  const status = observe(kind, answer).status ?? undefined
  send(input, input.status, Buffer.from(JSON.stringify(withGatewayId(kind, answer, id))), true)
  return { usage: units, job: { id, status } }
}

/**
 * A poll's answer: the first observation of the job's end bills it (completed) or releases its
 * hold (failed), once, whoever observes it; the client sees the gateway's id.
 */
async function answerPoll (deps: JobAnswerDeps, input: JobAnswerInput, answer: JsonObject): Promise<JobAnswered> {
  const job = jobOf(input.ctx)
  if (!job) throw jobNotFound()
  const seen = observe(job.kind, answer)
  if (job.state === 'pending' && seen.end !== 'running') await endJob(deps, job, seen.end, seen.status)
  send(input, input.status, Buffer.from(JSON.stringify(withGatewayId(job.kind, answer, job.id))), true)
  return { usage: { ...NO_USAGE }, job: { id: job.id, status: seen.status ?? undefined } }
}

/**
 * Answers a job create or poll (a small JSON object, read whole to rewrite its id). Upstream
 * refusals pass through untouched, except a poll's 404: the upstream forgot the job, which is
 * expired (its hold released) and answers the gateway's not-found.
 */
export async function answerJob (deps: JobAnswerDeps, input: JobAnswerInput): Promise<JobAnswered> {
  const bytes = await readBounded(input.body)
  if (bytes === null) throw gatewayError('UPSTREAM_ERROR')
  if (input.status >= 400) {
    const job = jobOf(input.ctx)
    if (input.ctx.plan.op.job?.role === 'poll' && input.status === 404 && job) {
      if (job.state === 'pending') await endJob(deps, job, 'expired', 'not_found')
      throw jobNotFound()
    }
    send(input, input.status, bytes, false)
    return { usage: null }
  }
  const answer = parseObject(bytes)
  if (answer === null) throw gatewayError('UPSTREAM_ERROR')
  return input.ctx.plan.op.job?.role === 'create' ? await answerCreate(deps, input, answer) : await answerPoll(deps, input, answer)
}
