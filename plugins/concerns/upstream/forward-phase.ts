import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Dispatcher } from 'undici'
import { errorFrame, gatewayError, GatewayError, billedHeader, toOccurrence, type Catalogue, type ErrorCode } from '../../foundation/errors/index.js'
import { createUsageEventFilter, type Translator, type TranslatorFor } from '../metering/index.js'
import type { ModelCatalogue } from '../models/catalogue.js'
import { answersAsStream, type Outcome, type RequestContext } from '../../foundation/pipeline/context.js'
import type { ForwardControl } from '../../foundation/pipeline/plugin.js'
import {
  callUpstream, clientErrorCode, countsAgainstMember, mapUpstreamFailure, unhealthyStatus, upstreamRequestHeaders, upstreamStatusError,
  type RequestHeaderFilter
} from './forward.js'
import type { CompiledPool, CompiledProvider, Upstreams } from './providers.js'
import { clientResponseHeaders, forwardedQuery } from './allow-lists.js'
import { AnswerWait } from './answer-wait.js'
import { FirstByteDeadline } from './first-byte.js'
import { relay, relayOutcome, type RelayEnd } from './relay.js'
import type { CompiledModel, Usage } from '../../foundation/shapes/index.js'

export interface ForwardDeps {
  upstreams: Upstreams
  models: ModelCatalogue
  catalogue: Catalogue
  headerFilter: RequestHeaderFilter
  drainTimeoutMs: number
  /** How long a client may read nothing before it is cut (server.client_write_stall_ms). */
  writeStallMs: number
  random: () => number
  retry: RetryPolicy
  /**
   * Each operation's translator: the request edits and the meter; for a job operation, the
   * job's own provider and the writer of its answer (plugins/concerns/jobs, wired by the composition root).
   */
  translatorFor: TranslatorFor
}

/**
 * Meters whose answer the provider generates during the call: not streamed, its first byte comes
 * only once the whole answer exists, so the wait for it is bounded by answer_timeout_ms.
 */
const GENERATES: ReadonlySet<string> = new Set(['tokens', 'images', 'transcription', 'speech'])

/** Headroom of the client's socket idle bound over a non-streamed answer's wait. */
const CLIENT_IDLE_HEADROOM_MS = 10_000

/**
 * The wait for the response headers of one attempt at `provider`: its answer_timeout_ms (or the
 * route's) when the answer is generated whole before its first byte, else its timeout_ms.
 */
function headersWaitMs (ctx: RequestContext, provider: CompiledProvider, wholeAnswer: boolean): number {
  return wholeAnswer ? ctx.plan.answerTimeoutMs ?? provider.answerTimeoutMs : provider.timeoutMs
}

/**
 * A non-streamed answer's wait moves no byte on the client's connection: its idle bound
 * (server.connection_idle_timeout_ms) would cut a client whose answer is still being generated.
 * This request's socket gets the wait plus headroom; Node sets the keep-alive bound once the
 * answer is written.
 */
function keepClientThroughWait (req: FastifyRequest, waitMs: number): void {
  const socket = req.raw.socket as (typeof req.raw.socket & { timeout?: number }) | null
  if (socket === null || socket.destroyed) return
  const idle = socket.timeout ?? 0
  if (idle > 0 && idle < waitMs + CLIENT_IDLE_HEADROOM_MS) socket.setTimeout(waitMs + CLIENT_IDLE_HEADROOM_MS)
}

/** Failures before the first byte after which the next fallback model is tried. */
const FALLBACK_ON: ReadonlySet<string> = new Set(['MODEL_UNAVAILABLE', 'MODEL_BUSY', 'PROVIDER_TIMEOUT', 'UPSTREAM_ERROR', 'LIMIT_RATE_EXCEEDED'])

function ms (from: bigint, to: bigint): number {
  return Number(to - from) / 1e6
}

function upstreamPath (ctx: RequestContext, provider: CompiledProvider, template: string, model: CompiledModel | null): string {
  let path = template
  if (model) path = path.replace('{model}', encodeURIComponent(model.upstreamModel))
  if (ctx.params.id !== undefined) path = path.replace('{id}', encodeURIComponent(ctx.params.id))
  const query = forwardedQuery(ctx.query, provider.allow.queryParams, ctx.plan.op.features.query)
  // A path that carries its own query (Azure's `?api-version=`) takes the forwarded parameters after it.
  return provider.basePath + path + (query !== '' && path.includes('?') ? `&${query.slice(1)}` : query)
}

interface Target { model: CompiledModel | null, poolName: string, template: string }

function targetOf (ctx: RequestContext, model: CompiledModel | null): Target {
  if (model) {
    const template = model.operations.get(ctx.plan.operation)
    if (template === undefined) throw gatewayError('MODEL_PROTOCOL_UNSUPPORTED', { param: 'model' })
    return { model, poolName: model.pool, template }
  }
  const up = ctx.plan.upstream
  if (!up) throw gatewayError('REQUEST_MODEL_REQUIRED', { param: 'model' })
  return { model: null, poolName: up.pool, template: up.path }
}

/** What a forward needs of the pool settings (upstream section of gateway.yaml), compiled once. */
export interface RetryPolicy {
  /** Most members of one pool one request is sent to. */
  maxTries: number
  /** Upstream statuses retried on another member (a bit per status 400..599). */
  retryStatuses: ReadonlySet<number>
}

/**
 * Sends the request upstream: per model (the primary, then its fallbacks), up to `maxTries`
 * members of its pool, skipping members whose circuit is open, while the upstream fails before
 * the first response byte (connection failure, first-byte timeout, a retryable status); then
 * relays the first usable answer. Nothing reached the client before a retry, so a retry is
 * invisible to it; once bytes went out, a failure ends the stream (PROVIDER_STREAM_INTERRUPTED).
 */
export function forward (deps: ForwardDeps, ctx: RequestContext, req: FastifyRequest, reply: FastifyReply, control: ForwardControl): Promise<void> {
  // The route's first-byte deadline (first_byte_timeout_ms), over every attempt; none when unset.
  const timeoutMs = ctx.plan.firstByteTimeoutMs
  return timeoutMs === undefined ? attempts(deps, ctx, req, reply, control, null) : withDeadline(deps, ctx, req, reply, control, timeoutMs)
}

/** The attempts under a first-byte deadline: past it, the call in flight is aborted and the request ends with REQUEST_TIMEOUT. */
async function withDeadline (deps: ForwardDeps, ctx: RequestContext, req: FastifyRequest, reply: FastifyReply, control: ForwardControl, timeoutMs: number): Promise<void> {
  const deadline = new FirstByteDeadline(timeoutMs)
  try {
    await attempts(deps, ctx, req, reply, control, deadline)
  } catch (err) {
    if (deadline.expired) {
      req.log.warn({ code: 'REQUEST_TIMEOUT', timeoutMs }, 'no first byte from the upstream in time; call cancelled')
      throw gatewayError('REQUEST_TIMEOUT', { detail: `The upstream sent nothing within ${timeoutMs} ms.`, cause: err })
    }
    throw err
  } finally {
    deadline.clear()
  }
}

async function attempts (deps: ForwardDeps, ctx: RequestContext, req: FastifyRequest, reply: FastifyReply, control: ForwardControl, deadline: FirstByteDeadline | null): Promise<void> {
  const res = reply.raw
  const primary = ctx.model
  const wholeAnswer = GENERATES.has(ctx.plan.op.meter.kind) && !answersAsStream(ctx)
  const candidates: Array<string | null> = [primary ? primary.id : null]
  if (primary) for (let i = 0; i < primary.fallbacks.length; i++) candidates.push(primary.fallbacks[i] as string)
  // One per request: the operation does not change with the fallback model.
  const translator = deps.translatorFor(ctx.plan.op)
  let lastError: GatewayError | null = null
  for (let i = 0; i < candidates.length; i++) {
    const id = candidates[i] ?? null
    if (i > 0 && id !== null) {
      let fallback: CompiledModel
      try {
        fallback = deps.models.resolve(id, ctx.plan.operation)
      } catch {
        continue // this fallback cannot serve the request; the primary's failure stands
      }
      if (!await control.retarget(fallback)) continue
    }
    const target = targetOf(ctx, ctx.model)
    const jobTarget = translator.target?.(ctx) ?? null
    const pool = jobTarget ? null : deps.upstreams.pool(target.poolName)
    const { body, filter } = translator.requestBody(ctx, target.model)
    const contentType = ctx.body?.kind === 'multipart' ? ctx.body.contentType : ctx.body ? 'application/json' : undefined
    // Bit k: member k of the pool was tried for this model.
    let tried = 0
    let tries = 0
    const maxTries = pool ? deps.retry.maxTries : 1
    let modelError: GatewayError | null = null
    while (tries < maxTries) {
      let provider: CompiledProvider
      if (pool) {
        const index = deps.upstreams.choose(pool, deps.random(), tried)
        if (index === -1) break
        tried |= 1 << index
        provider = (pool.members[index] as CompiledPool['members'][number]).provider
      } else {
        provider = deps.upstreams.provider((jobTarget as { provider: string }).provider)
      }
      tries++
      if (res.destroyed) {
        provider.health.released()
        throw gatewayError('REQUEST_CLIENT_DISCONNECTED')
      }
      const dispatchedAt = process.hrtime.bigint()
      const waitMs = headersWaitMs(ctx, provider, wholeAnswer)
      if (wholeAnswer) keepClientThroughWait(req, waitMs)
      // A client that leaves during a non-streamed answer's wait follows the provider's
      // disconnect policy (answer-wait.ts); a stream's relay does so once its headers come.
      const wait = wholeAnswer ? new AnswerWait(res, provider.drainOnDisconnect ? deps.drainTimeoutMs : 0, deadline?.signal) : null
      const signal = wait?.signal ?? deadline?.signal
      let upstream: Dispatcher.ResponseData
      try {
        upstream = await callUpstream(deps.upstreams.dispatcher, {
          provider,
          method: ctx.plan.method,
          path: jobTarget ? provider.basePath + jobTarget.path : upstreamPath(ctx, provider, target.template, target.model),
          headers: upstreamRequestHeaders(ctx.headers, deps.headerFilter, provider, contentType),
          headersTimeoutMs: waitMs,
          body,
          signal
        })
      } catch (err) {
        wait?.stop()
        if (wait?.cancelled === true) {
          // The client left and the call was cancelled (at once, or past the drain window).
          provider.health.released()
          leftBeforeAnswer(translator, ctx, reply, control, dispatchedAt)
          return
        }
        // Past the route's first-byte deadline: no other member is tried (see withDeadline).
        if (deadline?.expired === true) {
          provider.health.released()
          throw err
        }
        const mapped = mapUpstreamFailure(err, false)
        if (wholeAnswer && mapped.code === 'PROVIDER_TIMEOUT') {
          // The provider may still be generating this answer, and billing the operator for it:
          // another member or a fallback would generate (and bill) it again, and one tenant's
          // long answers say nothing of the member's health. Not billed to the tenant (no answer).
          provider.health.released()
          req.log.warn({ provider: provider.name, code: mapped.code, timeoutMs: waitMs }, 'non-streamed answer not finished in time; call cancelled')
          throw gatewayError('PROVIDER_TIMEOUT', { detail: `The provider did not finish the answer within ${waitMs} ms; a long answer can be streamed.`, cause: err })
        }
        req.log.warn({ provider: provider.name, code: mapped.code, cause: (err as Error)?.message }, 'upstream request failed')
        if (countsAgainstMember(mapped.code)) provider.health.failed(Date.now(), mapped.code)
        else provider.health.released()
        modelError = mapped
        // A connection failure or a first-byte timeout is tried on another member.
        if (mapped.code === 'MODEL_UNAVAILABLE' || mapped.code === 'PROVIDER_TIMEOUT') continue
        break
      }
      wait?.stop()
      const status = upstream.statusCode
      const statusError = status >= 400 ? upstreamStatusError(status, upstream.headers['retry-after']) : null
      if (statusError !== null) {
        // Read (and drop) a small error body so the connection is reused; a large one closes it.
        upstream.body.dump({ limit: 65_536 }).catch(() => {})
        if (unhealthyStatus(status)) provider.health.failed(Date.now(), `status ${status}`)
        else provider.health.released()
        req.log.warn({ provider: provider.name, status }, 'upstream answered with an error')
        modelError = statusError
        if (deps.retry.retryStatuses.has(status)) continue
        break
      }
      provider.health.succeeded()
      // A usable answer began: the first-byte deadline no longer applies (it would cut the body).
      deadline?.clear()
      // A client that left during the wait is read for what is left of its drain window.
      const drainMs = provider.drainOnDisconnect ? wait?.remainingDrainMs() ?? deps.drainTimeoutMs : 0
      const jobAnswer = relayAnswer(deps, translator, ctx, reply, control, upstream, provider, primary, filter, dispatchedAt, drainMs)
      if (jobAnswer !== undefined) await jobAnswer
      return
    }
    if (modelError === null && pool) {
      // No member could be tried: every circuit of the pool is open.
      const waitS = Math.max(1, Math.ceil(deps.upstreams.soonestProbeMs(pool) / 1000))
      modelError = gatewayError('MODEL_UNAVAILABLE', { retryAfterSeconds: waitS, detail: 'Every upstream of this model is failing; it is retried after a cool-down.' })
    }
    lastError = modelError
    if (lastError !== null && FALLBACK_ON.has(lastError.code) && i < candidates.length - 1) continue
    break
  }
  throw lastError ?? gatewayError('MODEL_UNAVAILABLE')
}

/**
 * A non-streamed request whose client left before the answer came, and whose call was then
 * cancelled (answer-wait.ts): settled like a stream cancelled before any output, on the
 * estimate (the input, and the output only where the model may have reasoned unseen), marked
 * estimated. Nothing is sent (the client is gone); status 499 in the request log.
 */
function leftBeforeAnswer (translator: Translator, ctx: RequestContext, reply: FastifyReply, control: ForwardControl, dispatchedAt: bigint): void {
  reply.hijack()
  const now = process.hrtime.bigint()
  const meter = translator.meter(ctx, ctx.model, false, 200, false)
  control.end({
    kind: 'client_disconnected',
    errorCode: 'REQUEST_CLIENT_DISCONNECTED',
    httpStatus: 499,
    answeredModel: ctx.model,
    upstreamMs: ms(dispatchedAt, now),
    usage: meter.finish(),
    overheadMs: ms(ctx.handledAt, dispatchedAt)
  })
}

/** The contract's error headers on a relayed upstream refusal (X-Request-ID and X-Gateway-Billed are set already). */
function addErrorHeaders (own: Record<string, string>, catalogue: Catalogue, code: ErrorCode): void {
  const entry = catalogue.get(code)
  own['x-gateway-error-code'] = entry.code
  own['x-gateway-error-reference'] = entry.reference
  own.link = entry.link
  own['content-language'] = catalogue.contentLanguage
  own['cache-control'] = 'no-store'
}

/**
 * Relays the upstream's answer (a success or a 4xx the client caused) and ends the request when
 * it ends. Synchronous (no promise, positional arguments: nothing allocated on the way) except
 * for a job's answer, whose promise it returns.
 */
function relayAnswer (
  deps: ForwardDeps, translator: Translator, ctx: RequestContext, reply: FastifyReply, control: ForwardControl,
  upstream: Dispatcher.ResponseData, provider: CompiledProvider, primary: CompiledModel | null, filter: boolean, dispatchedAt: bigint,
  drainMs: number
): Promise<void> | undefined {
  const res = reply.raw
  const headersAt = process.hrtime.bigint()
  const answered = ctx.model
  const contentTypeBack = String(upstream.headers['content-type'] ?? '')
  const sse = ctx.plan.response === 'sse' || (ctx.plan.response === 'auto' && contentTypeBack.startsWith('text/event-stream'))
  const answeredOk = upstream.statusCode < 400
  const own: Record<string, string> = {
    'x-request-id': ctx.requestId,
    // An upstream refusal (4xx) is passed through and never billed.
    'x-gateway-billed': billedHeader(answeredOk ? ctx.billing : 'NOT_BILLED')
  }
  if (answered) own['x-gateway-model'] = answered.id
  if (answered && primary && answered.id !== primary.id) own['x-gateway-requested-model'] = primary.id
  const overheadMs = ms(ctx.handledAt, dispatchedAt) + ms(headersAt, process.hrtime.bigint())
  own['x-gateway-overhead-ms'] = overheadMs.toFixed(3)
  // A 4xx the client caused keeps the provider's body (its SDK parses it) and carries every
  // error header of the contract, with the catalogue code it stands for.
  const refusedAs = answeredOk ? null : clientErrorCode(upstream.statusCode)
  if (refusedAs !== null) addErrorHeaders(own, deps.catalogue, refusedAs)
  // A job create or poll: the translator reads the whole answer and writes the client's.
  const answer = translator.answer
  if (answer !== undefined) {
    return (async () => {
      const r = await answer({ ctx, reply, status: upstream.statusCode, headers: clientResponseHeaders(upstream.headers, own, provider.allow), body: upstream.body, provider: provider.name, answered })
      control.end({ kind: 'completed', httpStatus: upstream.statusCode, errorCode: null, answeredModel: answered, upstreamMs: ms(dispatchedAt, process.hrtime.bigint()), usage: r.usage, overheadMs, ...(r.job ? { job: r.job } : {}) })
    })()
  }
  const dropUsage = filter && answeredOk
  const meter = answeredOk ? translator.meter(ctx, answered, sse, upstream.statusCode, dropUsage) : null
  let usage: Usage | null = null
  const finalUsage = (): Usage | null => {
    if (meter && !usage) usage = meter.finish()
    return usage
  }

  const outcomeOf = (end: RelayEnd): Outcome => {
    const { kind, errorCode } = relayOutcome(end)
    const outcome: Outcome = {
      kind,
      errorCode: errorCode ?? refusedAs,
      httpStatus: upstream.statusCode,
      answeredModel: answered,
      upstreamMs: ms(dispatchedAt, process.hrtime.bigint()),
      usage: finalUsage(),
      overheadMs
    }
    // Set, not spread into the literal: a literal of conditional spreads takes V8's slow path.
    if (meter && (meter.jobId !== undefined || meter.jobStatus !== undefined)) outcome.job = { id: meter.jobId, status: meter.jobStatus }
    return outcome
  }
  reply.hijack()
  relay({
    res,
    status: upstream.statusCode,
    headers: clientResponseHeaders(upstream.headers, own, provider.allow),
    body: upstream.body,
    sse,
    // By default a client that leaves cancels its upstream at once (billed for what was produced).
    drainTimeoutMs: drainMs,
    writeStallMs: deps.writeStallMs,
    // Destroying the body aborts the upstream request (undici closes its connection).
    abortUpstream: () => { upstream.body.destroy() },
    // One walk meters and filters where the meter can; else the filter walks the stream apart.
    filter: meter?.filter ?? (dropUsage ? createUsageEventFilter() : undefined),
    onChunk: meter?.filter ? undefined : meter?.onChunk,
    // The error frame says what the settle will do with what was metered so far.
    errorFrame: () => {
      const billing = finalUsage() ? control.billingStatus({ ...outcomeOf('stream_interrupted'), httpStatus: 200 }) : 'NOT_BILLED'
      return errorFrame(toOccurrence(gatewayError('PROVIDER_STREAM_INTERRUPTED'), ctx.requestId, deps.catalogue, billing), ctx.plan.envelope)
    },
    onEnd: (end: RelayEnd) => { control.end(outcomeOf(end)) }
  })
}
