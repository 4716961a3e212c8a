// The admin API on a listener of its own. Operators' calls create keys and move money, so by
// default they are served on loopback only (`admin.host: 127.0.0.1`), apart from the public
// listener that tenants reach; `serve` starts both. Mounting the admin routes on the main app
// (buildServer's `adminToken`) stays possible for embedded use and tests.
import { randomUUID } from 'node:crypto'
import Fastify, { LogController, type FastifyBaseLogger, type FastifyError, type FastifyInstance, type FastifyReply, type FastifyRequest, type FastifyServerOptions } from 'fastify'
import { compileCatalogue, gatewayError, renderError, toOccurrence, type Catalogue } from '../../foundation/errors/index.js'
import type { AdminConfig, GatewayConfig } from '../../foundation/config/types.js'
import type { Clock, Store } from '../../foundation/store/index.js'
import { ADMIN_BODY_LIMIT_BYTES } from '../admin/constants.js'
import { adminTokenProblem } from '../admin/routes.js'
import type { AdminThrottle } from '../admin/throttle.js'
import type { ConfigControl, ReadinessSource } from '../admin/config-routes.js'
import type { UpstreamView } from '../../concerns/upstream/index.js'
import { metricsRoute, type GatewayMetrics } from '../../concerns/metrics/index.js'
import { registerAdminApi } from './admin-api.js'

export interface AdminServerOptions {
  config: GatewayConfig
  /** The error catalogue of `config`'s plan (serve passes its boot plan's); compiled here when absent. */
  catalogue?: Catalogue
  store: Store
  /** GATEWAY_ADMIN_TOKEN, already checked with adminTokenProblem; without it only the metrics are served. */
  token?: string | undefined
  /** Prometheus metrics served at `path` (no admin token: the listener is loopback by default). */
  metrics?: { metrics: GatewayMetrics, path: string }
  clock?: Clock
  throttle?: AdminThrottle
  logger?: FastifyServerOptions['logger']
  /** The gateway's upstream circuit state (GET /admin/v1/upstreams); absent: the route lists none. */
  upstreamView?: UpstreamView
  /** A logger to share (serve passes the public server's, so their lines come out in order). */
  loggerInstance?: FastifyBaseLogger
  /** Config reload and the instances listing (serve's hot reload); absent: those routes do not exist. */
  control?: ConfigControl
  /** The config in force when a reload can change it (default `config`). */
  currentConfig?: () => GatewayConfig
  /** The public listener's readiness, reported whole at GET /admin/v1/readyz (absent: no such route). */
  readiness?: () => ReadinessSource
  /** Writes the gateway's queued request log rows before GET /admin/v1/requests lists them. */
  flushRequestLog?: () => Promise<void>
}

/** Where the admin listener binds: GATEWAY_ADMIN_HOST / GATEWAY_ADMIN_PORT, else `config.admin`. */
export function adminListenAddress (admin: AdminConfig, env: NodeJS.ProcessEnv = process.env): { host: string, port: number } {
  const host = env.GATEWAY_ADMIN_HOST !== undefined && env.GATEWAY_ADMIN_HOST !== '' ? env.GATEWAY_ADMIN_HOST : admin.host
  const portText = env.GATEWAY_ADMIN_PORT
  const port = portText !== undefined && /^\d{1,5}$/.test(portText) && Number(portText) <= 65535 ? Number(portText) : admin.port
  return { host, port }
}

/**
 * The one line `serve` prints before exiting non-zero when the admin token is unusable, or
 * null (also when no token is set: the admin API is then simply off).
 */
export function adminStartupProblem (token: string | undefined, admin: AdminConfig): string | null {
  if (token === undefined || token === '') return null
  const problem = adminTokenProblem(token, admin.token_min_length)
  return problem === null ? null : `${problem}; the gateway does not start with a weak admin token`
}

/** The longest path parameter the admin listener reads (the id schemas' own bound); past it the router refuses. */
export const ADMIN_MAX_PARAM_LENGTH = 200

/**
 * Fastify's `frameworkErrors` of the admin listener: a path that is not valid percent-encoding or
 * a segment over ADMIN_MAX_PARAM_LENGTH is refused before any route runs; answered like every
 * admin error (REQUEST_INVALID naming `path`, the chat envelope, no-store), not Fastify's own body.
 */
function adminFrameworkErrors (catalogue: Catalogue): (error: FastifyError, req: FastifyRequest, reply: FastifyReply) => void {
  return (error, req, reply) => {
    const detail = error.code === 'FST_ERR_MAX_PARAM_LENGTH'
      ? `A path segment is longer than ${ADMIN_MAX_PARAM_LENGTH} characters.`
      : 'The path is not valid percent-encoding.'
    const rendered = renderError(toOccurrence(gatewayError('REQUEST_INVALID', { param: 'path', detail }), req.id, catalogue), 'chat', catalogue)
    reply.code(rendered.status).headers(rendered.headers).header('cache-control', 'no-store').header('x-request-id', req.id).send(rendered.body)
  }
}

/** A Fastify instance serving the admin API under /admin/v1 (with a token) and the metrics (when given); the caller listens and closes it. */
export async function buildAdminServer (opts: AdminServerOptions): Promise<FastifyInstance> {
  const catalogue = opts.catalogue ?? compileCatalogue(opts.config.errors, opts.config.server)
  const app = Fastify({
    ...(opts.loggerInstance
      ? { loggerInstance: opts.loggerInstance }
      : { logger: opts.logger ?? { level: process.env.LOG_LEVEL ?? 'info', redact: { paths: ['req.headers.authorization'], censor: '[redacted]' } } }),
    bodyLimit: ADMIN_BODY_LIMIT_BYTES,
    routerOptions: { maxParamLength: ADMIN_MAX_PARAM_LENGTH },
    frameworkErrors: adminFrameworkErrors(catalogue),
    genReqId: () => `req_${randomUUID().replace(/-/g, '')}`,
    // Fastify's per-request log pair is off (the deprecated `disableRequestLogging` warns on stderr at boot).
    logController: new LogController({ disableRequestLogging: true }),
    forceCloseConnections: true
  })
  if (opts.metrics) metricsRoute(app, opts.metrics.metrics, opts.metrics.path)
  if (opts.token === undefined || opts.token === '') return app
  await registerAdminApi(app, {
    store: opts.store,
    config: opts.config,
    catalogue,
    token: opts.token,
    ...(opts.clock ? { clock: opts.clock } : {}),
    ...(opts.throttle ? { throttle: opts.throttle } : {}),
    ...(opts.currentConfig ? { currentConfig: opts.currentConfig } : {}),
    ...(opts.flushRequestLog ? { flushRequestLog: opts.flushRequestLog } : {}),
    ...(opts.upstreamView ? { upstreamView: opts.upstreamView } : {}),
    ...(opts.control ? { control: opts.control } : {}),
    ...(opts.readiness ? { readiness: opts.readiness } : {})
  })
  return app
}
