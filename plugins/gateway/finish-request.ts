import type { FastifyBaseLogger } from 'fastify'
import { authOf } from '../auth/auth-stage.js'
import type { RequestLogRow } from '../store/request-log/types.js'
import type { RequestLogWriter } from '../store/request-log/writer.js'
import { settle, type SettleDeps, type Settled } from '../wallet/settle.js'
import type { Outcome, RequestContext } from './context.js'

export interface FinishDeps extends SettleDeps {
  requestLog: RequestLogWriter
  log: FastifyBaseLogger
}

const UNSETTLED: Settled = { billing: 'UNKNOWN', cost: null, held: null, holdId: null, postingId: null, capped: false }

/** The request log row of a finished request; never holds the key, only its id. */
export function requestRow (ctx: RequestContext, outcome: Outcome, settled: Settled, now: Date): RequestLogRow {
  const auth = authOf(ctx)
  const usage = outcome.usage
  return {
    requestId: ctx.requestId,
    accountId: auth?.account.id ?? null,
    keyId: auth?.key.id ?? null,
    route: ctx.plan.id,
    operation: ctx.plan.operation,
    requestedModel: ctx.requestedModelId,
    answeredModel: outcome.answeredModel?.id ?? null,
    status: outcome.httpStatus,
    outcome: outcome.kind,
    errorCode: outcome.errorCode,
    // A route declared `response: sse` streams whatever its body says (`:streamGenerateContent`).
    stream: ctx.plan.response === 'sse' || (ctx.body?.kind === 'json' && ctx.body.json.stream === true),
    usage: usage === null
      ? null
      : {
          inputTokens: usage.inputTokens,
          outputTokens: usage.outputTokens,
          cachedInputTokens: usage.cachedInputTokens,
          images: usage.images,
          audioSeconds: usage.audioSeconds,
          characters: usage.characters,
          calls: usage.calls,
          jobs: usage.jobs
        },
    usageReported: usage?.reported ?? null,
    cost: settled.cost,
    held: settled.held,
    holdId: settled.holdId,
    postingId: settled.postingId,
    billingStatus: settled.billing,
    overheadMs: outcome.overheadMs,
    upstreamMs: outcome.upstreamMs,
    totalMs: Number(process.hrtime.bigint() - ctx.startedAt) / 1e6,
    createdAt: now
  }
}

/** Settles and logs a finished request; `drain()` waits for every settlement started so far. */
export interface FinishRequest {
  (ctx: RequestContext, outcome: Outcome): void
  /**
   * Resolves once every settlement started so far has queued its request log row. A graceful
   * shutdown awaits it before the request log writer closes: a settlement still waiting on
   * the database would otherwise write its row to a closed writer, and the row would be lost.
   */
  drain (): Promise<void>
  /**
   * Settles a request before its answer's last byte goes out (the same settlement `finish`
   * reuses). An accepted job is recorded before the client can poll it, so a poll that comes
   * right away still finds the job's hold.
   */
  settleNow (ctx: RequestContext, outcome: Outcome): Promise<void>
}

const SETTLED_SLOT = 'settled'

/** One settlement per request, whoever asks first. */
function settleOnce (deps: FinishDeps, ctx: RequestContext, outcome: Outcome): Promise<Settled> {
  let settling = ctx.slots.get(SETTLED_SLOT) as Promise<Settled> | undefined
  if (!settling) {
    settling = settle(deps, ctx, outcome, outcome.usage)
    ctx.slots.set(SETTLED_SLOT, settling)
  }
  return settling
}

/**
 * Runs once per request after its answer ended: settles the wallet hold from the metered
 * usage, then queues the request log row (batched; never awaited on the hot path).
 */
export function finishRequest (deps: FinishDeps): FinishRequest {
  const pending = new Set<Promise<void>>()
  const finish = (ctx: RequestContext, outcome: Outcome): void => {
    const settling: Promise<void> = settleOnce(deps, ctx, outcome).then(
      (settled) => { deps.requestLog.write(requestRow(ctx, outcome, settled, deps.clock.now())) },
      (err: unknown) => {
        // The hold stays open and the reaper releases it; the row says the charge is unknown.
        deps.log.error({ err, requestId: ctx.requestId }, 'settlement failed')
        deps.requestLog.write(requestRow(ctx, outcome, UNSETTLED, deps.clock.now()))
      }
    ).finally(() => { pending.delete(settling) })
    pending.add(settling)
  }
  return Object.assign(finish, {
    async drain (): Promise<void> {
      while (pending.size > 0) await Promise.allSettled([...pending])
    },
    async settleNow (ctx: RequestContext, outcome: Outcome): Promise<void> {
      await settleOnce(deps, ctx, outcome).then(() => {}, () => {})
    }
  })
}
