import type { FastifyInstance } from 'fastify'
import { adminListenAddress, adminStartupProblem, buildAdminServer } from '../admin/admin-server.js'
import { ConfigError, formatProblem, loadConfig } from '../config/index.js'
import type { GatewayConfig } from '../config/types.js'
import { buildServer, metricsConfig } from './server.js'
import { openServices, serviceEnvFromProcess, type GatewayServices } from '../gateway/index.js'
import { createUpstreamView } from '../upstream/index.js'
import { listenFailure, startupLine } from './startup-error.js'

export const SERVE_USAGE = 'serve [file]   start the gateway (config: $GATEWAY_CONFIG or ./gateway.yaml; PORT and HOST override it)'

/** The prefix of every start-up failure line on stderr. */
export const STARTUP_FAILURE_PREFIX = 'model-gateway: cannot start: '

/**
 * What is switched off at boot, one line each, so a newcomer sees why something answers 404 or
 * 401: the admin API without a token, providers whose credential headers are empty.
 */
export function offAtBoot (config: GatewayConfig, adminToken: string | undefined): string[] {
  const lines: string[] = []
  if (adminToken === undefined || adminToken === '') {
    lines.push('admin API is off: GATEWAY_ADMIN_TOKEN is not set (set it to create accounts and keys over HTTP; the CLI works without it)')
  }
  const metrics = metricsConfig(config)
  if (!metrics.enabled) lines.push('metrics are off: observability.metrics.enabled is false')
  if (config.observability?.access_log.enabled === false) lines.push('access log is off: observability.access_log.enabled is false')
  for (const [name, provider] of Object.entries(config.providers)) {
    const empty = Object.entries(provider.headers)
      .filter(([, value]) => value.replace(/^\s*(Bearer|Basic)\b/i, '').trim() === '')
      .map(([header]) => header)
    if (empty.length > 0) {
      lines.push(`provider ${name} has no credential: header ${empty.join(', ')} is empty (its models answer the provider's 401 until it is set)`)
    }
  }
  return lines
}

/** Starts the gateway and resolves with the exit code once SIGINT/SIGTERM closed it gracefully. */
export async function serveCommand (args: readonly string[]): Promise<number> {
  const file = args[0] ?? process.env.GATEWAY_CONFIG ?? './gateway.yaml'
  let loaded
  try {
    loaded = loadConfig(file)
  } catch (err) {
    if (err instanceof ConfigError) {
      for (const p of err.problems) process.stderr.write(formatProblem(p) + '\n')
      process.stderr.write(`${STARTUP_FAILURE_PREFIX}${file}: ${err.problems.length} problem(s); the gateway does not start on a bad config\n`)
      return 1
    }
    process.stderr.write(`${STARTUP_FAILURE_PREFIX}${file}: ${startupLine(err)}\n`)
    return 1
  }
  const adminToken = process.env.GATEWAY_ADMIN_TOKEN
  const adminProblem = adminStartupProblem(adminToken, loaded.config.admin)
  if (adminProblem !== null) {
    process.stderr.write(`${STARTUP_FAILURE_PREFIX}${adminProblem}\n`)
    return 1
  }
  let services: GatewayServices | undefined
  let app: FastifyInstance | undefined
  let admin: FastifyInstance | null = null
  try {
    services = await openServices({
      ...serviceEnvFromProcess(),
      defaultTier: loaded.config.limits.default_tier,
      limitsRedisTimeoutMs: loaded.config.limits.redis_timeout_ms,
      unknownKeyTtlMs: loaded.config.auth.unknown_key_ttl_ms,
      unknownKeyCacheMax: loaded.config.auth.unknown_key_cache_max
    })
    // The admin API is not on the public listener: it gets its own, on loopback by default.
    const upstreamView = createUpstreamView()
    app = await buildServer({ config: loaded.config, services, upstreamView })
    const metricsSettings = metricsConfig(loaded.config)
    const adminMetrics = app.gatewayMetrics !== null && metricsSettings.listener === 'admin'
      ? { metrics: app.gatewayMetrics, path: metricsSettings.path }
      : undefined
    // The admin listener serves the admin API (with a token) and the metrics (when they live there).
    admin = adminToken || adminMetrics
      ? await buildAdminServer({ config: loaded.config, store: services.store, token: adminToken, clock: services.clock, loggerInstance: app.log.child({ listener: 'admin' }), upstreamView, ...(adminMetrics ? { metrics: adminMetrics } : {}) })
      : null
    for (const line of offAtBoot(loaded.config, adminToken)) app.log.warn(line)
    const { port, host } = loaded.config.server
    try {
      await app.listen({ port, host })
    } catch (err) {
      throw listenFailure('the gateway', host, port, err)
    }
    if (admin) {
      const at = adminListenAddress(loaded.config.admin)
      try {
        await admin.listen(at)
      } catch (err) {
        throw listenFailure('the admin API', at.host, at.port, err)
      }
      app.log.info({ admin: admin.server.address(), metrics: adminMetrics?.path ?? null }, adminToken ? 'admin API listening' : 'admin listener ready (metrics only)')
    }
  } catch (err) {
    process.stderr.write(`${STARTUP_FAILURE_PREFIX}${startupLine(err)}\n`)
    // Whatever was opened is closed, so the process exits instead of waiting on a socket.
    try {
      await app?.close()
      await admin?.close()
      await services?.close()
    } catch { /* the start already failed; its line is out */ }
    return 1
  }
  const ready = app
  const adminApp = admin
  const opened = services
  app.log.info({ config: file, hash: loaded.hash.slice(0, 12) }, 'model gateway ready')
  return await new Promise<number>((resolve) => {
    let closing = false
    const stop = (signal: string): void => {
      if (closing) return
      closing = true
      ready.log.info({ signal }, 'shutting down: finishing in-flight requests')
      // In this order, each step after the previous one ended: stop accepting and let the
      // answers finish (up to server.shutdown_grace_ms), settle every request (the gateway's
      // close waits for them), close the admin listener, then flush the request log and close
      // the stores. A hook on the server's close would run before the gateway's own (Fastify
      // closes the plugins loaded last first) and close the stores under the settlements.
      ready.close()
        .then(async () => { await adminApp?.close() })
        .then(async () => { await opened.close() })
        .then(() => resolve(0), (err: unknown) => {
          ready.log.error({ err }, 'shutdown failed')
          resolve(1)
        })
    }
    process.once('SIGINT', () => stop('SIGINT'))
    process.once('SIGTERM', () => stop('SIGTERM'))
  })
}
