import { randomUUID } from 'node:crypto'
import Fastify, { LogController, type FastifyInstance, type FastifyServerOptions } from 'fastify'
import type { GatewayConfig } from '../config/types.js'
import { gatewayFrameworkErrors, modelGateway, type GatewayOptions } from './index.js'

/** Header names whose values are credentials; pino replaces them wherever a request is logged. */
export const REDACTED_PATHS = [
  'req.headers.authorization', 'req.headers["x-api-key"]', 'req.headers["x-genai-api-key"]',
  'req.headers["x-goog-api-key"]', 'req.headers.cookie', 'headers.authorization', 'headers["x-api-key"]'
]

export interface ServerOptions extends Omit<GatewayOptions, 'config'> {
  config: GatewayConfig
  logger?: FastifyServerOptions['logger']
}

export function newRequestId (): string {
  return `req_${randomUUID().replace(/-/g, '')}`
}

/** A standalone Fastify server with the gateway registered at the root, plus health endpoints. */
export async function buildServer (opts: ServerOptions): Promise<FastifyInstance> {
  const app = Fastify({
    logger: opts.logger ?? { level: process.env.LOG_LEVEL ?? 'info', redact: { paths: REDACTED_PATHS, censor: '[redacted]' } },
    bodyLimit: opts.config.server.body_limit_bytes,
    genReqId: newRequestId,
    // One log line per request comes from the gateway's own finish hook, not Fastify's pair.
    logController: new LogController({ disableRequestLogging: true, requestIdLogLabel: 'requestId' }),
    frameworkErrors: gatewayFrameworkErrors(opts.config),
    return503OnClosing: true,
    forceCloseConnections: 'idle'
  })
  app.get('/healthz', async () => ({ status: 'ok' }))
  app.get('/readyz', async () => ({ status: 'ready' }))
  await app.register(modelGateway, opts)
  return app
}
