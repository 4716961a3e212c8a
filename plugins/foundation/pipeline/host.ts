import { STATUS_CODES } from 'node:http'
import type { Socket } from 'node:net'
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { GatewayConfig } from '../config/types.js'
import { classify, compileCatalogue, gatewayError, renderError, toOccurrence, type BillingStatus, type Catalogue, type ErrorCode } from '../errors/index.js'
import { compileRoutes, type CompiledRoutes, type FastifyRouteSpec, type RoutePlan } from '../routes/compile.js'
import { bodyUnread } from './body-unread.js'
import type { Outcome, RequestContext } from './context.js'
import { planPhases, routeChain, runPhase, type ForwardControl, type GatewayPlugin, type PhasePlan, type RouteChain } from './plugin.js'
import { newRequestId } from './request-id.js'
import type { ParsedBody } from '../shapes/index.js'

/**
 * At close, how much longer than `server.drain_timeout_ms` the host waits for requests whose
 * connection was closed under them to end: a relay whose client is gone reads its upstream for
 * the usage up to the drain timeout, then aborts it and ends the request.
 */
export const CLOSE_DRAIN_MARGIN_MS = 2000

/** Live counts a standalone server reads to shut down gracefully. */
export interface PipelineStats {
  /** Requests between arrival and the end of their answer. */
  inflight: number
  /**
   * Set by a server that is shutting down: a request that still arrives (on a kept-alive
   * connection) is refused with MODEL_BUSY (503, Retry-After) in its family's envelope.
   */
  closing?: boolean
}

/**
 * What the host reads of the gateway's plan (plugins/apps/gateway/plan.ts: compiled once per config):
 * the routes it registers, the error catalogue it renders refusals with, the server settings.
 */
export interface HostPlan {
  readonly hash: string
  readonly config: GatewayConfig
  readonly routes: CompiledRoutes
  readonly catalogue: Catalogue
}

export interface PipelineOptions {
  plan: HostPlan
  /** The concerns, in the order their hooks run (the composition root's list). */
  plugins: readonly GatewayPlugin[]
  stats?: PipelineStats
}

declare module 'fastify' {
  interface FastifyRequest {
    gatewayContext: RequestContext | null
  }
}

/** The host's own bookkeeping beside what concerns see. */
interface HostContext extends RequestContext {
  /** admitting and reading the body, then handling (resolve onwards), then ended (settle and finish run). */
  stage: 'admit' | 'handle' | 'ended'
  /** The settle phase of this request, once started (it runs once, whoever asks first). */
  settling: Promise<void> | null
  /** The hooks of this request's route (built once per route plan). */
  chain: RouteChain
}

function queryOf (url: string): string {
  const q = url.indexOf('?')
  return q === -1 ? '' : url.slice(q)
}

export function pathOf (url: string): string {
  const q = url.indexOf('?')
  return q === -1 ? url : url.slice(0, q)
}

/** What rendering an error before any route needs: the catalogue and the envelope of a path. */
export type ErrorPlan = Pick<HostPlan, 'catalogue' | 'routes'>

/**
 * A plan's catalogue and routes; a bare config (an app that mounts the gateway and has no plan
 * at hand) has them compiled here, apart from its plan.
 */
function errorPlanOf (source: GatewayConfig | ErrorPlan): ErrorPlan {
  if ('catalogue' in source) return source
  return { catalogue: compileCatalogue(source.errors, source.server), routes: compileRoutes(source) }
}

/** Node's client-side failures before any request exists (oversized headers, a malformed request line). */
const CLIENT_ERRORS: Readonly<Record<string, ErrorCode>> = {
  HPE_HEADER_OVERFLOW: 'REQUEST_HEADERS_TOO_LARGE',
  ERR_HTTP_REQUEST_TIMEOUT: 'REQUEST_TIMEOUT'
}

/** The path of a raw request's first line (`POST /v1/messages HTTP/1.1`), or '/' when unreadable. */
function rawPath (packet: unknown): string {
  if (!Buffer.isBuffer(packet)) return '/'
  const line = packet.subarray(0, Math.min(packet.length, 2048)).toString('latin1')
  const first = line.indexOf(' ')
  const second = first === -1 ? -1 : line.indexOf(' ', first + 1)
  return second === -1 ? '/' : pathOf(line.slice(first + 1, second))
}

/**
 * Fastify's `clientErrorHandler` server option, in the gateway's envelopes: Node answers a
 * request it could not parse (headers over the size cap: 431; a malformed request; a request
 * that did not arrive in time: 408) on the raw socket, before Fastify sees a request. The
 * answer carries every error header; the envelope is the family of the path on the request
 * line when it can be read, else the chat-completions one.
 */
export function gatewayClientErrors (source: GatewayConfig | ErrorPlan): (err: Error & { code?: string, rawPacket?: unknown }, socket: Socket) => void {
  const { catalogue, routes } = errorPlanOf(source)
  return (err, socket) => {
    if (err.code === 'ECONNRESET' || socket.destroyed) return
    const code = (err.code !== undefined ? CLIENT_ERRORS[err.code] : undefined) ?? 'REQUEST_INVALID'
    const occurrence = toOccurrence(gatewayError(code), newRequestId(), catalogue)
    const rendered = renderError(occurrence, routes.envelopeForPath(rawPath(err.rawPacket)), catalogue)
    if (socket.writable) {
      let head = `HTTP/1.1 ${rendered.status} ${STATUS_CODES[rendered.status] ?? 'Error'}\r\n`
      for (const name in rendered.headers) head += `${name}: ${rendered.headers[name] as string}\r\n`
      const body = Buffer.from(rendered.body)
      socket.write(`${head}content-length: ${body.length}\r\nconnection: close\r\n\r\n`)
      socket.write(body)
    }
    socket.destroy()
  }
}

/**
 * Fastify's `frameworkErrors` server option, in the gateway's envelopes: Fastify answers some
 * failures before any route, hook or error handler runs (a path that is not valid percent-encoding,
 * an over-long path parameter) and would otherwise send its own body without the error headers.
 * It is a server option, so an app that registers the plugin passes it to `Fastify()` itself.
 */
export function gatewayFrameworkErrors (source: GatewayConfig | ErrorPlan): (error: FastifyError, req: FastifyRequest, reply: FastifyReply) => void {
  const { catalogue, routes } = errorPlanOf(source)
  return (error, req, reply) => {
    const rendered = renderError(toOccurrence(error, req.id, catalogue), routes.envelopeForPath(pathOf(req.url)), catalogue)
    reply.code(rendered.status).headers(rendered.headers).send(rendered.body)
  }
}

function outcomeKind (code: string): Outcome['kind'] {
  if (code === 'REQUEST_CLIENT_DISCONNECTED' || code === 'REQUEST_ABORTED') return 'client_disconnected'
  return code.startsWith('UPSTREAM_') || code.startsWith('PROVIDER_') ? 'upstream_error' : 'refused'
}

/**
 * The host: one Fastify route per declared path, each running the phases of the plugins it is
 * given, through the route's own chain (the hooks that apply to its plan, chosen once at
 * registration). It knows no concern; what a request goes through is the composition root's list.
 */
export async function pipelineHost (app: FastifyInstance, opts: PipelineOptions): Promise<void> {
  const { config, routes } = opts.plan
  const catalogue: Catalogue = opts.plan.catalogue
  const phases: PhasePlan = planPhases(opts.plugins)
  const stats = opts.stats ?? { inflight: 0 }
  // Settlements running (settle, then finish): a shutdown waits until none is. A count and the
  // waiters of its next zero, not a Set of their promises (the Set's table was rehashed as
  // requests came and went: 1.3 µs a request at 50 connections, cpu-prof, 2026-11-27).
  let settling = 0
  let settled: Array<() => void> = []
  const allSettled = (): Promise<void> => new Promise((resolve) => { settled.push(resolve) })
  app.decorateRequest('gatewayContext', null)
  for (const p of phases.plugins) p.setup?.(app)

  const billingStatus = (ctx: HostContext, outcome: Outcome): BillingStatus => {
    const deciders = ctx.chain.billingStatus
    for (let i = 0; i < deciders.length; i++) {
      const status = (deciders[i] as typeof deciders[number])(ctx, outcome)
      if (status !== undefined) return status
    }
    return 'NOT_BILLED'
  }

  const settleOnce = (ctx: HostContext, outcome: Outcome): Promise<void> => {
    ctx.settling ??= (async () => {
      const hooks = ctx.chain.settle
      for (let i = 0; i < hooks.length; i++) {
        try {
          const r = (hooks[i] as typeof hooks[number])(ctx, outcome)
          if (r !== undefined) await r
        } catch (err) {
          // What this hook kept stays open (a hold is released by the reaper); the next hooks still run.
          app.log.error({ err, requestId: ctx.requestId }, 'settlement failed')
        }
      }
    })()
    return ctx.settling
  }

  /** The request's answer ended: settle, then finish; a shutdown waits for both. */
  const end = (ctx: HostContext, outcome: Outcome): void => {
    if (ctx.stage === 'ended') return
    ctx.stage = 'ended'
    stats.inflight--
    settleOnce(ctx, outcome).then(() => {
      const hooks = ctx.chain.finish
      for (let i = 0; i < hooks.length; i++) {
        try {
          (hooks[i] as typeof hooks[number])(ctx, outcome)
        } catch (err) {
          app.log.error({ err, requestId: ctx.requestId }, 'finish hook failed')
        }
      }
    }).finally(() => {
      if (--settling > 0) return
      const waiting = settled
      settled = []
      for (let i = 0; i < waiting.length; i++) (waiting[i] as () => void)()
    })
    settling++
  }

  const refusal = (ctx: HostContext, err: unknown): void => {
    const code = classify(err).code
    // Refused or failed before any answer: whatever was held is released, nothing is billed.
    ctx.billing = 'NOT_BILLED'
    end(ctx, {
      kind: outcomeKind(code),
      httpStatus: catalogue.get(code).status,
      errorCode: code,
      answeredModel: null,
      upstreamMs: null,
      usage: null,
      overheadMs: null
    })
  }

  const sendError = (req: FastifyRequest, reply: FastifyReply, err: unknown): FastifyReply => {
    const ctx = req.gatewayContext as HostContext | null
    // A body Fastify could not read (too large, malformed, or the client left while sending it)
    // ends the request here.
    if (ctx !== null && ctx.stage !== 'ended') refusal(ctx, req.raw.socket.destroyed ? gatewayError('REQUEST_ABORTED') : err)
    const envelope = ctx?.plan.envelope ?? routes.envelopeForPath(pathOf(req.url))
    const { internal } = classify(err)
    if (internal) req.log.error({ err }, 'unexpected gateway error')
    const occurrence = toOccurrence(err, req.id, catalogue, ctx?.billing ?? 'NOT_BILLED')
    const rendered = renderError(occurrence, envelope, catalogue)
    // A refusal before the body arrived whole (no key, an invalid key, a rate limit: the admit
    // phase runs before the body is read) closes the connection, so the rest of the body is
    // never read: Node ends the socket once this answer is written (docs/security.md).
    if (bodyUnread(req.raw)) reply.header('connection', 'close')
    return reply.code(rendered.status).headers(rendered.headers).send(rendered.body)
  }

  app.setErrorHandler((err, req, reply) => sendError(req, reply, err))
  app.setNotFoundHandler((req, reply) => sendError(req, reply, gatewayError('REQUEST_ROUTE_NOT_FOUND')))
  app.addHook('onClose', async () => {
    // Answers cut when the server closed their connections (a stream that outlived the
    // shutdown grace) end a moment later, when their relay sees the socket go: wait for every
    // request to end (bounded), and for every settlement, before any plugin closes what they
    // write to (the ledger, the request log).
    const started = Date.now()
    const deadline = started + config.server.drain_timeout_ms + CLOSE_DRAIN_MARGIN_MS
    for (;;) {
      if (settling > 0) await allSettled()
      else if (stats.inflight > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 5))
      else break
    }
    if (stats.inflight > 0) {
      app.log.warn({ requests: stats.inflight }, 'requests still running at close: their holds are left to the reaper')
    } else if (Date.now() - started > 100) {
      app.log.info({ waitedMs: Date.now() - started }, 'shutdown: every request ended and settled')
    }
    for (const p of [...phases.plugins].reverse()) await p.close?.()
  })

  /** admit: runs in onRequest, before Fastify reads the body. */
  const admit = async (req: FastifyRequest, plan: RoutePlan, chain: RouteChain, params: { model?: string, id?: string }): Promise<void> => {
    const ctx: HostContext = {
      requestId: req.id,
      startedAt: process.hrtime.bigint(),
      handledAt: 0n,
      plan,
      body: undefined,
      headers: req.headers,
      params,
      query: queryOf(req.url),
      requestedModelId: null,
      model: null,
      billing: 'NOT_BILLED',
      state: {},
      stage: 'admit',
      settling: null,
      chain
    }
    req.gatewayContext = ctx
    stats.inflight++
    try {
      if (stats.closing === true) throw gatewayError('MODEL_BUSY', { closeConnection: true, detail: 'This gateway instance is shutting down.' })
      await runPhase(chain.admit, ctx, req)
    } catch (err) {
      refusal(ctx, err)
      throw err
    }
  }

  const handle = async (req: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const ctx = req.gatewayContext as HostContext
    ctx.stage = 'handle'
    ctx.handledAt = process.hrtime.bigint()
    ctx.body = req.body as ParsedBody | undefined
    const control: ForwardControl = {
      retarget: async (model) => {
        ctx.model = model
        try {
          await runPhase(ctx.chain.resolve, ctx, req)
          await runPhase(ctx.chain.charge, ctx, req)
          return true
        } catch {
          return false
        }
      },
      billingStatus: (outcome) => billingStatus(ctx, outcome),
      end: (outcome) => { end(ctx, outcome) }
    }
    try {
      await runPhase(ctx.chain.resolve, ctx, req)
      await runPhase(ctx.chain.charge, ctx, req)
      await ctx.chain.forward(ctx, req, reply, control)
    } catch (err) {
      refusal(ctx, err)
      if (!reply.raw.destroyed) sendError(req, reply, err)
    }
  }

  /** A client that left while its body was still being read: recorded as REQUEST_ABORTED. */
  const onRequestAbort = async (req: FastifyRequest): Promise<void> => {
    const ctx = req.gatewayContext as HostContext | null
    if (ctx !== null && ctx.stage === 'admit') refusal(ctx, gatewayError('REQUEST_ABORTED'))
  }

  // One chain per route plan (aliases and a wildcard's matchers share their plan's), built here,
  // once: what applies to a route is decided from its plan, not asked again by each request.
  const chains = new Map<RoutePlan, RouteChain>()
  const chainOf = (plan: RoutePlan): RouteChain => {
    let chain = chains.get(plan)
    if (chain === undefined) {
      chain = routeChain(phases, plan)
      chains.set(plan, chain)
    }
    return chain
  }

  const register = (spec: FastifyRouteSpec): void => {
    if (spec.kind === 'plain') {
      const plan = spec.plan
      const chain = chainOf(plan)
      // Two families on one path: the first variant whose header the request carries.
      const variants = (spec.variants ?? []).map((v) => ({ header: v.header, plan: v.plan, chain: chainOf(v.plan) }))
      app.route({
        method: spec.method,
        url: spec.url,
        onRequest: async (req) => {
          const p = req.params as { id?: string }
          const params = p.id === undefined ? {} : { id: p.id }
          for (const v of variants) {
            if (req.headers[v.header] !== undefined) {
              await admit(req, v.plan, v.chain, params)
              return
            }
          }
          await admit(req, plan, chain, params)
        },
        onRequestAbort,
        handler: handle
      })
      return
    }
    const { prefix } = spec
    const matchers = spec.matchers.map((m) => ({ pattern: m.pattern, plan: m.plan, chain: chainOf(m.plan) }))
    app.route({
      method: spec.method,
      url: spec.url,
      onRequest: async (req) => {
        const rest = pathOf(req.raw.url ?? '').slice(prefix.length)
        for (const m of matchers) {
          const found = m.pattern.exec(rest)
          if (found?.[1] !== undefined) {
            await admit(req, m.plan, m.chain, { model: found[1] })
            return
          }
        }
        // An unknown action under a known prefix answers in that prefix's envelope.
        throw gatewayError('REQUEST_ROUTE_NOT_FOUND')
      },
      onRequestAbort,
      handler: handle
    })
  }
  for (const spec of routes.fastifyRoutes) register(spec)
}
