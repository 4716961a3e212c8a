import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { GatewayConfig } from '../config/types.js'
import { compileCatalogue, gatewayError, renderError, toOccurrence, classify } from '../errors/index.js'
import { compileModels, type ModelCatalogue } from '../models/catalogue.js'
import { capConnectionsPerAddress } from '../limits/connection-cap.js'
import { bodyOptionsOf, isParsedBody, registerBodyParsers } from '../request/body.js'
import { deferredWorkStage } from '../request/deferred-work.js'
import { compileRoutes, type FastifyRouteSpec, type RoutePlan } from '../routes/compile.js'
import { compileUpstreams } from '../upstream/providers.js'
import type { Outcome, RequestContext } from './context.js'
import { capabilityStage, modelStage, requestStage } from './core-stages.js'
import { forward, type ForwardDeps } from './forward-stage.js'
import { buildStageChain, runStages, type Stage } from './stages.js'

export type { Outcome, RequestContext } from './context.js'
export type { Stage } from './stages.js'

export interface GatewayOptions {
  config: GatewayConfig
  /** The compiled catalogue, when the caller already compiled it (the server shares it with settlement). */
  models?: ModelCatalogue
  /** Stages contributed by other plugins (auth, limits, wallet), merged with the core ones by priority. */
  stages?: readonly Stage[]
  /** Settles an accepted job before its answer ends, so an immediate poll finds it. */
  settleNow?: (ctx: RequestContext, outcome: Outcome) => Promise<void>
  /** Called once per request with its outcome, after the response ended. */
  onFinish?: (ctx: RequestContext, outcome: Outcome) => void
  /** Injected randomness for the weighted upstream pick. */
  random?: () => number
  /** Counts requests between arrival and their finish, so a shutdown can wait for them. */
  inflight?: { count: number }
  /** Billing status a broken stream's error frame announces (the wallet's rule); NOT_BILLED without it. */
  streamBillingStatus?: ForwardDeps['streamBillingStatus']
}

declare module 'fastify' {
  interface FastifyRequest {
    gatewayContext: RequestContext | null
  }
}

function queryOf (url: string): string {
  const q = url.indexOf('?')
  return q === -1 ? '' : url.slice(q)
}

function pathOf (url: string): string {
  const q = url.indexOf('?')
  return q === -1 ? url : url.slice(0, q)
}

/**
 * Fastify's `frameworkErrors` server option, in the gateway's envelopes: Fastify answers some
 * failures before any route, hook or error handler runs (a path that is not valid percent-encoding,
 * an over-long path parameter) and would otherwise send its own body without the error headers.
 * It is a server option, so an app that registers the plugin passes it to `Fastify()` itself.
 */
export function gatewayFrameworkErrors (config: GatewayConfig): (error: FastifyError, req: FastifyRequest, reply: FastifyReply) => void {
  const catalogue = compileCatalogue(config.errors, config.server)
  const routes = compileRoutes(config)
  return (error, req, reply) => {
    const rendered = renderError(toOccurrence(error, req.id, catalogue), routes.envelopeForPath(pathOf(req.url)), catalogue)
    reply.code(rendered.status).headers(rendered.headers).send(rendered.body)
  }
}

/**
 * The gateway as a Fastify plugin: one route per declared path, each running the stage chain
 * and then forwarding. Register it on a fresh instance (see server.ts) or inside an existing one.
 */
export async function modelGateway (app: FastifyInstance, opts: GatewayOptions): Promise<void> {
  const { config } = opts
  const catalogue = compileCatalogue(config.errors, config.server)
  const models = opts.models ?? compileModels(config)
  const routes = compileRoutes(config)
  const upstreams = compileUpstreams(config)
  const chain = buildStageChain([requestStage, deferredWorkStage, modelStage(models), capabilityStage, ...(opts.stages ?? [])])
  app.decorateRequest('gatewayContext', null)
  app.addHook('onClose', async () => { await upstreams.close() })

  const inflight = opts.inflight ?? { count: 0 }
  const finish = (ctx: RequestContext, outcome: Outcome): void => {
    inflight.count--
    opts.onFinish?.(ctx, outcome)
  }

  const deps: ForwardDeps = {
    upstreams,
    models,
    catalogue,
    chain,
    headerFilter: { strip: new Set(config.auth.strip_headers.map((h) => h.toLowerCase())) },
    drainTimeoutMs: config.server.drain_timeout_ms,
    writeStallMs: config.server.client_write_stall_ms,
    random: opts.random ?? Math.random,
    finish,
    ...(opts.settleNow ? { settleNow: opts.settleNow } : {}),
    ...(opts.streamBillingStatus ? { streamBillingStatus: opts.streamBillingStatus } : {})
  }

  const sendError = (req: FastifyRequest, reply: FastifyReply, err: unknown): FastifyReply => {
    const ctx = req.gatewayContext
    const envelope = ctx?.plan.envelope ?? routes.envelopeForPath(pathOf(req.url))
    const { internal } = classify(err)
    if (internal) req.log.error({ err }, 'unexpected gateway error')
    const occurrence = toOccurrence(err, req.id, catalogue, ctx?.billing ?? 'NOT_BILLED')
    const rendered = renderError(occurrence, envelope, catalogue)
    return reply.code(rendered.status).headers(rendered.headers).send(rendered.body)
  }

  registerBodyParsers(app, bodyOptionsOf(config.server, routes))
  app.setErrorHandler((err, req, reply) => sendError(req, reply, err))
  capConnectionsPerAddress(app, config.server.max_connections_per_address)
  app.setNotFoundHandler((req, reply) => sendError(req, reply, gatewayError('REQUEST_ROUTE_NOT_FOUND')))

  const handle = async (req: FastifyRequest, reply: FastifyReply, plan: RoutePlan, params: { model?: string, id?: string }): Promise<void> => {
    const ctx: RequestContext = {
      requestId: req.id,
      startedAt: process.hrtime.bigint(),
      plan,
      body: isParsedBody(req.body) ? req.body : undefined,
      headers: req.headers,
      params,
      query: queryOf(req.url),
      requestedModelId: null,
      model: null,
      billing: 'NOT_BILLED',
      slots: new Map()
    }
    req.gatewayContext = ctx
    inflight.count++
    try {
      await runStages(chain.all, ctx, req)
      await forward(deps, ctx, req, reply)
    } catch (err) {
      const code = classify(err).code
      // Refused or failed before any answer: whatever was held is released, nothing is billed.
      ctx.billing = 'NOT_BILLED'
      finish(ctx, {
        kind: code === 'REQUEST_CLIENT_DISCONNECTED' ? 'client_disconnected' : code.startsWith('UPSTREAM_') || code.startsWith('PROVIDER_') ? 'upstream_error' : 'refused',
        httpStatus: catalogue.get(code).status,
        errorCode: code,
        answeredModel: null,
        upstreamMs: null,
        usage: null,
        overheadMs: null
      })
      if (!reply.raw.destroyed) sendError(req, reply, err)
    }
  }

  const register = (spec: FastifyRouteSpec): void => {
    if (spec.kind === 'plain') {
      const plan = spec.plan
      app.route({
        method: spec.method,
        url: spec.url,
        handler: async (req, reply) => {
          const p = req.params as { id?: string }
          await handle(req, reply, plan, p.id === undefined ? {} : { id: p.id })
        }
      })
      return
    }
    const { prefix, matchers } = spec
    app.route({
      method: spec.method,
      url: spec.url,
      handler: async (req, reply) => {
        const rest = pathOf(req.raw.url ?? '').slice(prefix.length)
        for (const m of matchers) {
          const found = m.pattern.exec(rest)
          if (found?.[1] !== undefined) {
            await handle(req, reply, m.plan, { model: found[1] })
            return
          }
        }
        // An unknown action under a known prefix answers in that prefix's envelope.
        sendError(req, reply, gatewayError('REQUEST_ROUTE_NOT_FOUND'))
      }
    })
  }
  for (const spec of routes.fastifyRoutes) register(spec)
}
