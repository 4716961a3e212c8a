import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyServerFactory, type FastifyServerOptions } from 'fastify'
import type { GatewayConfig } from '../../foundation/config/types.js'
import { RedisInvalidationBus } from '../../foundation/keys/redis-invalidation-bus.js'
import { GatewayMetrics, metricsRoute } from '../../concerns/metrics/index.js'
import { serverBounds } from '../../foundation/request/server-bounds.js'
import { createUpstreamView } from '../../concerns/upstream/index.js'
import { readinessProbe, readinessRoute, type ConfigState, type ReadinessProbe } from './readiness.js'
import { registerAdminApi } from './admin-api.js'
import { requestLoggerFactory } from './request-logger.js'
import { compilePlan, gatewayClientErrors, gatewayFrameworkErrors, modelGateway, newRequestId, type GatewayOptions, type GatewayServices, type PipelineStats } from '../gateway/index.js'

/** Header names whose values are credentials; pino replaces them wherever a request is logged. */
export const REDACTED_PATHS = [
  'req.headers.authorization', 'req.headers["x-api-key"]', 'req.headers["x-genai-api-key"]',
  'req.headers["x-goog-api-key"]', 'req.headers.cookie', 'headers.authorization', 'headers["x-api-key"]'
]

export interface ServerOptions extends Omit<GatewayOptions, 'config' | 'services' | 'stats' | 'metrics'> {
  config: GatewayConfig
  /** Store and key cache; the caller owns them (closes them after the server). */
  services: GatewayServices
  /** GATEWAY_ADMIN_TOKEN: the admin API under /admin/v1 exists only when it is set. */
  adminToken?: string | undefined
  /**
   * Log a warning when the store runs on a generated GATEWAY_SECRET (default true). `serve` and
   * the demo say it once, in plain words, among the boot notes instead.
   */
  secretNotice?: boolean
  logger?: FastifyServerOptions['logger']
  /** A logger to share instead of `logger` (a config generation logs through the first one's). */
  loggerInstance?: FastifyBaseLogger
  /**
   * The instance's metrics; default one built when `observability.metrics.enabled` (null: none).
   * Served here when `observability.metrics.listener` is `public`; `serve` passes the same one
   * to the admin listener otherwise.
   */
  metrics?: GatewayMetrics | null
  /**
   * Builds the app on a server it does not own (a config generation of plugins/apps/server/reload.ts:
   * the public listener is created once and hands each request to the current generation).
   */
  serverFactory?: FastifyServerFactory
  /** What /readyz reports as the served config; default this config's hash. */
  configState?: () => ConfigState
}

declare module 'fastify' {
  interface FastifyInstance {
    /** The metrics the gateway on this server counts into (null when off). */
    gatewayMetrics: GatewayMetrics | null
    /** The pipeline's live counts (requests in flight, closing) of the gateway on this server. */
    gatewayStats: PipelineStats
    /** This server's readiness (the public /readyz says its status; the admin API the whole report). */
    gatewayReadiness: ReadinessProbe
  }
}

/** `observability.metrics` with the schema's defaults (a config built by hand may omit it). */
export function metricsConfig (config: GatewayConfig): NonNullable<GatewayConfig['observability']>['metrics'] {
  return config.observability?.metrics ?? { enabled: true, listener: 'admin', path: '/metrics', default_metrics: true }
}

/** `server.trust_proxy` (a config built by hand may omit it: no proxy is trusted). */
function trustedProxies (config: GatewayConfig): readonly string[] {
  return (config.server as Partial<GatewayConfig['server']>).trust_proxy ?? []
}

/** The standalone server: the gateway plugin at the root, plus health endpoints and a graceful shutdown. */
export async function buildServer (opts: ServerOptions): Promise<FastifyInstance> {
  if (opts.plan !== undefined && opts.plan.config !== opts.config) throw new TypeError('buildServer: `plan` is not the plan of `config`')
  // The config's one compile: every part of this server reads this plan.
  const plan = opts.plan ?? compilePlan(opts.config)
  const app = Fastify({
    ...(opts.loggerInstance
      ? { loggerInstance: opts.loggerInstance }
      : { logger: opts.logger ?? { level: process.env.LOG_LEVEL ?? 'info', redact: { paths: REDACTED_PATHS, censor: '[redacted]' } } }),
    bodyLimit: opts.config.server.body_limit_bytes,
    // Request, header, idle and keep-alive timeouts of the listener.
    ...serverBounds(opts.config.server),
    genReqId: newRequestId,
    // Behind the listed proxies, req.ip and req.protocol come from X-Forwarded-For / -Proto
    // (the console's throttles and its Secure cookie); otherwise those headers mean nothing.
    ...(trustedProxies(opts.config).length > 0 ? { trustProxy: [...trustedProxies(opts.config)] } : {}),
    // One log line per request comes from the gateway's own finish hook, not Fastify's pair.
    logController: new LogController({ disableRequestLogging: true, requestIdLogLabel: 'requestId' }),
    // A request's child logger is made when it first logs (most requests never do). Without a
    // logger Fastify makes none at all, and is left to.
    ...(opts.logger === false && opts.loggerInstance === undefined ? {} : { childLoggerFactory: requestLoggerFactory }),
    frameworkErrors: gatewayFrameworkErrors(plan),
    // Oversized headers (431), a malformed request, Node's request deadline (408): the envelope.
    clientErrorHandler: gatewayClientErrors(plan),
    // A request arriving while the server closes is refused by the gateway itself (MODEL_BUSY in
    // its family's envelope, see PipelineStats.closing), not with Fastify's own 503 body.
    return503OnClosing: false,
    forceCloseConnections: 'idle',
    ...(opts.serverFactory ? { serverFactory: opts.serverFactory } : {})
  })
  const stats: PipelineStats = { inflight: 0 }
  app.get('/healthz', async () => ({ status: 'ok' }))
  app.decorate('gatewayStats', stats)
  const { services, logger: _logger, adminToken, secretNotice = true, metrics: givenMetrics, serverFactory: _factory, configState: givenState, loggerInstance: _loggerInstance, ...gatewayOptions } = opts
  const configState: ConfigState = { hash: plan.hash }
  const readiness = readinessProbe({ store: services.store, redis: services.store.bus instanceof RedisInvalidationBus, config: givenState ?? (() => configState), closing: () => stats.closing === true })
  app.decorate('gatewayReadiness', readiness)
  readinessRoute(app, readiness)
  const metricsSettings = metricsConfig(opts.config)
  const metrics = givenMetrics !== undefined
    ? givenMetrics
    : metricsSettings.enabled ? new GatewayMetrics({ defaultMetrics: metricsSettings.default_metrics }) : null
  app.decorate('gatewayMetrics', metrics)
  if (metrics !== null && metricsSettings.listener === 'public') metricsRoute(app, metrics, metricsSettings.path)
  if (secretNotice && services.store.secretGenerated) {
    app.log.warn('GATEWAY_SECRET is not set: using the generated secret in the data directory (embedded dev mode only)')
  }
  // A graceful shutdown lets in-flight answers finish (up to the grace period), then closes
  // every connection, including idle ones that never sent a request and would otherwise keep
  // server.close() waiting for the headers timeout.
  app.addHook('preClose', async () => {
    stats.closing = true
    // On a server it does not own, the owner stops accepting, waits and closes the connections
    // (plugins/apps/server/reload.ts); the gateway's own close still settles every request.
    if (opts.serverFactory !== undefined) return
    const deadline = Date.now() + opts.config.server.shutdown_grace_ms
    while (stats.inflight > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 25))
    app.server.closeAllConnections()
  })
  const upstreamView = gatewayOptions.upstreamView ?? createUpstreamView()
  await app.register(modelGateway, { ...gatewayOptions, plan, services, stats, upstreamView, ...(metrics !== null ? { metrics } : {}) })
  if (adminToken) {
    await registerAdminApi(app, {
      store: services.store,
      config: opts.config,
      catalogue: plan.catalogue,
      token: adminToken,
      clock: services.clock,
      flushRequestLog: async () => { await services.requestLog.flush() },
      upstreamView,
      readiness: () => readiness
    })
  }
  return app
}
