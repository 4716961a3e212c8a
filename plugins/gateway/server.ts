import { randomUUID } from 'node:crypto'
import Fastify, { LogController, type FastifyInstance, type FastifyServerOptions } from 'fastify'
import type { GatewayConfig } from '../config/types.js'
import { ADMIN_PREFIX } from '../admin/constants.js'
import { adminRoutes } from '../admin/routes.js'
import { authStage, modelAccessStage } from '../auth/auth-stage.js'
import { compileModels } from '../models/catalogue.js'
import { interruptedStreamBilling } from '../wallet/settle.js'
import { serverBounds } from '../request/server-bounds.js'
import { createHoldKeeper } from '../wallet/hold-renewal.js'
import { walletStage } from '../wallet/wallet-stage.js'
import { finishRequest } from './finish-request.js'
import { gatewayFrameworkErrors, modelGateway, type GatewayOptions } from './index.js'
import type { GatewayServices } from './services.js'

/** Header names whose values are credentials; pino replaces them wherever a request is logged. */
export const REDACTED_PATHS = [
  'req.headers.authorization', 'req.headers["x-api-key"]', 'req.headers["x-genai-api-key"]',
  'req.headers["x-goog-api-key"]', 'req.headers.cookie', 'headers.authorization', 'headers["x-api-key"]'
]

export interface ServerOptions extends Omit<GatewayOptions, 'config'> {
  config: GatewayConfig
  /** Store and key cache; the caller owns them (closes them after the server). */
  services: GatewayServices
  /** GATEWAY_ADMIN_TOKEN: the admin API under /admin/v1 exists only when it is set. */
  adminToken?: string | undefined
  logger?: FastifyServerOptions['logger']
}

/**
 * `req_` + 32 hex digits: 12 of the time in milliseconds, then 20 random ones (a v4 UUID's,
 * without its fixed version and variant digits). Ids sort by time, so request log rows are
 * appended at the end of their index instead of on random pages.
 */
export function newRequestId (): string {
  const uuid = randomUUID()
  // xxxxxxxx-xxxx-4xxx-Vxxx-xxxxxxxxxxxx: the 8+4+3+3+12 digits that are random.
  const random = uuid.slice(0, 8) + uuid.slice(9, 13) + uuid.slice(15, 18) + uuid.slice(20, 23) + uuid.slice(24, 26)
  return `req_${Date.now().toString(16).padStart(12, '0')}${random}`
}

/** A standalone Fastify server with the gateway registered at the root, plus health endpoints. */
export async function buildServer (opts: ServerOptions): Promise<FastifyInstance> {
  const app = Fastify({
    logger: opts.logger ?? { level: process.env.LOG_LEVEL ?? 'info', redact: { paths: REDACTED_PATHS, censor: '[redacted]' } },
    bodyLimit: opts.config.server.body_limit_bytes,
    ...serverBounds(opts.config.server),
    genReqId: newRequestId,
    // One log line per request comes from the gateway's own finish hook, not Fastify's pair.
    logController: new LogController({ disableRequestLogging: true, requestIdLogLabel: 'requestId' }),
    frameworkErrors: gatewayFrameworkErrors(opts.config),
    return503OnClosing: true,
    forceCloseConnections: 'idle'
  })
  app.get('/healthz', async () => ({ status: 'ok' }))
  app.get('/readyz', async () => ({ status: 'ready' }))
  const { services, logger: _logger, adminToken, ...gatewayOptions } = opts
  if (services.store.secretGenerated) {
    app.log.warn('GATEWAY_SECRET is not set: using the generated secret in the data directory (embedded dev mode only)')
  }
  // A graceful shutdown lets in-flight answers finish (up to the grace period), then closes
  // every connection, including idle ones that never sent a request and would otherwise keep
  // server.close() waiting for the headers timeout.
  const inflight = { count: 0 }
  app.addHook('preClose', async () => {
    const deadline = Date.now() + opts.config.server.shutdown_grace_ms
    while (inflight.count > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 25))
    app.server.closeAllConnections()
  })
  const keeper = createHoldKeeper({ ledger: services.store.ledger, warn: (fields) => { app.log.warn(fields, 'hold renewal') } })
  const stages = [
    authStage({ config: opts.config.auth, store: services.store, cache: services.keyCache, clock: services.clock }),
    modelAccessStage,
    walletStage({ ledger: services.store.ledger, config: opts.config.wallet, keeper }),
    ...(opts.stages ?? [])
  ]
  const models = compileModels(opts.config)
  const settleAndLog = finishRequest({
    ledger: services.store.ledger,
    jobs: services.store.jobs,
    models,
    requestLog: services.requestLog,
    clock: services.clock,
    log: app.log,
    keeper
  })
  const onFinish = opts.onFinish
  await app.register(modelGateway, {
    ...gatewayOptions,
    models,
    stages,
    inflight,
    // The error frame of a broken stream says what its settle will do with what was metered.
    streamBillingStatus: interruptedStreamBilling,
    settleNow: settleAndLog.settleNow,
    onFinish: (ctx, outcome) => {
      settleAndLog(ctx, outcome)
      onFinish?.(ctx, outcome)
    }
  })
  // Every instance releases holds whose instance died (their expiry passed); the ledger makes
  // concurrent reapers safe.
  const reaper = setInterval(() => {
    services.store.ledger.reapExpired().then(
      (n) => { if (n > 0) app.log.warn({ released: n }, 'released expired holds') },
      (err: unknown) => app.log.error({ err }, 'hold reaper failed')
    )
  }, opts.config.wallet.reaper_interval_ms)
  reaper.unref()
  app.addHook('onClose', async () => {
    clearInterval(reaper)
    // Every answer has ended (preClose); their settlements must queue their rows before the
    // caller closes the request log writer.
    await settleAndLog.drain()
  })
  if (adminToken) {
    await app.register(adminRoutes, { prefix: ADMIN_PREFIX, store: services.store, config: opts.config, token: adminToken, clock: services.clock })
  }
  return app
}
