import type { FastifyInstance } from 'fastify'
import { adminListenAddress, adminStartupProblem, buildAdminServer } from './admin-server.js'
import { ConfigError, formatProblem } from '../../foundation/config/index.js'
import type { GatewayConfig } from '../../foundation/config/types.js'
import { metricsConfig } from './server.js'
import { listenFailure, loadConfig, openServices, serviceEnvFromProcess, startupLine, type GatewayServices } from '../gateway/index.js'
import type { ReloadAnswer } from '../admin/config-routes.js'
import { startInstanceRegistry, type InstanceRegistry } from './instances.js'
import { GatewayHost, type ReloadOutcome } from './reload.js'
import { preloadTokenizers } from '../../concerns/metering/index.js'

export { SERVE_USAGE } from './serve-usage.js'

/** The prefix of every start-up failure line on stderr. */
export const STARTUP_FAILURE_PREFIX = 'model-gateway: cannot start: '

/** The prefix of each boot note on stderr (what is off, config warnings): plain words, not log JSON. */
export const BOOT_NOTE_PREFIX = 'model-gateway: note: '

/**
 * What is switched off at boot, one line each, so a newcomer sees why something answers 404 or
 * 401: the admin API without a token, providers whose credential headers are empty, a data
 * directory's generated secret. `serve` prints them plainly on stderr, apart from the JSON log.
 */
export function offAtBoot (config: GatewayConfig, adminToken: string | undefined, secretGenerated = false): string[] {
  const lines: string[] = []
  if (secretGenerated) {
    lines.push('GATEWAY_SECRET is not set: the data directory\'s generated secret is used (fine for one embedded instance; set it for anything shared)')
  }
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
      lines.push(`provider ${name} has no credential: header ${empty.join(', ')} is empty (its models answer the provider's 401 until it is set; docs/configuration.md#environment)`)
    }
  }
  return lines
}

/**
 * The tokenizers of the catalogue's OpenAI models, loaded before the listener opens (o200k_base:
 * ~270 ms of CPU and ~70 MB, once per process). An estimate (a cut stream, a missing usage)
 * would otherwise load it on the event loop under traffic, stalling every request in flight.
 * A retired model's is not: it answers no request (one the admin API brings back loads its own
 * on its first estimate, as before).
 */
function preloadModelTokenizers (host: GatewayHost | undefined): void {
  if (host === undefined) return
  const started = process.hrtime.bigint()
  try {
    const tokenizers = preloadTokenizers(host.config.models.filter((m) => m.status !== 'retired').map((m) => m.upstream_model))
    if (tokenizers.length > 0) host.app.log.info({ tokenizers, ms: Math.round(Number(process.hrtime.bigint() - started) / 1e6) }, 'tokenizers loaded')
  } catch (err) {
    // Not fatal: an estimate that cannot load its tokenizer counts the model's whole context.
    host.app.log.warn({ err }, 'the tokenizers could not be preloaded')
  }
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
  let gateway: GatewayHost | undefined
  let registry: InstanceRegistry | undefined
  let admin: FastifyInstance | null = null
  try {
    services = await openServices({
      ...serviceEnvFromProcess(),
      defaultTier: loaded.config.limits.default_tier,
      limitsRedisTimeoutMs: loaded.config.limits.redis_timeout_ms,
      unknownKeyTtlMs: loaded.config.auth.unknown_key_ttl_ms,
      unknownKeyCacheMax: loaded.config.auth.unknown_key_cache_max
    })
    // The public listener serves the config generation in force (hot reload: plugins/apps/server/reload.ts).
    // The admin API is not on it: it gets its own listener, on loopback by default.
    const opened = services
    gateway = await GatewayHost.start({
      file,
      loaded,
      services,
      secretNotice: false,
      onSwap: async () => {
        preloadModelTokenizers(gateway)
        await registry?.beat()
      }
    })
    const host = gateway
    preloadModelTokenizers(host)
    const app = gateway.app
    registry = await startInstanceRegistry({ store: opened.store, hash: () => host.hash, reloadedAt: () => host.reloadedAt, log: app.log })
    const instances = registry
    const metricsSettings = metricsConfig(loaded.config)
    const adminMetrics = host.metrics !== null && metricsSettings.listener === 'admin'
      ? { metrics: host.metrics, path: metricsSettings.path }
      : undefined
    // The admin listener serves the admin API (with a token) and the metrics (when they live there).
    admin = adminToken || adminMetrics
      ? await buildAdminServer({
        config: loaded.config,
        catalogue: host.plan.catalogue,
        currentConfig: () => host.config,
        store: opened.store,
        token: adminToken,
        clock: opened.clock,
        loggerInstance: app.log.child({ listener: 'admin' }),
        upstreamView: host.upstreamView,
        control: { reload: async () => reloadAnswer(await host.reload()), instances: async () => await instances.list() },
        readiness: () => host.app.gatewayReadiness,
        flushRequestLog: async () => { await opened.requestLog.flush() },
        ...(adminMetrics ? { metrics: adminMetrics } : {})
      })
      : null
    const { port, host: address } = loaded.config.server
    try {
      await gateway.listen(port, address)
    } catch (err) {
      throw listenFailure('the gateway', address, port, err)
    }
    const bound = gateway.server.address()
    // The line Fastify's own listen() printed before the listener moved to the reload host.
    if (bound !== null && typeof bound === 'object') app.log.info(`Server listening at http://${bound.family === 'IPv6' ? `[${bound.address}]` : bound.address}:${bound.port}`)
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
      await gateway?.close()
      await admin?.close()
      await registry?.stop()
      await services?.close()
    } catch { /* the start already failed; its line is out */ }
    return 1
  }
  const ready = gateway
  const adminApp = admin
  const opened = services
  const instance = registry
  // Said once the gateway is up (a start that fails says only why, in one line).
  for (const line of offAtBoot(loaded.config, adminToken, opened.store.secretGenerated)) process.stderr.write(BOOT_NOTE_PREFIX + line + '\n')
  for (const w of loaded.warnings ?? []) process.stderr.write(BOOT_NOTE_PREFIX + formatProblem(w) + '\n')
  ready.log.info({ config: file, hash: loaded.hash.slice(0, 12), instance: instance.id }, 'model gateway ready')
  // SIGHUP: read the file again (the outcome is logged: 'config reloaded', or the check report).
  const onHangup = (): void => {
    ready.log.info({ signal: 'SIGHUP' }, 'config reload asked')
    ready.reload().catch((err: unknown) => { ready.log.error({ err }, 'config reload failed') })
  }
  process.on('SIGHUP', onHangup)
  return await new Promise<number>((resolve) => {
    let closing = false
    const stop = (signal: string): void => {
      if (closing) return
      closing = true
      process.off('SIGHUP', onHangup)
      ready.log.info({ signal }, 'shutting down: finishing in-flight requests')
      // In this order, each step after the previous one ended: stop accepting and let the
      // answers finish (up to server.shutdown_grace_ms), settle every request (each config
      // generation's close waits for them), close the admin listener, remove this instance's
      // row, then flush the request log and close the stores. A hook on the server's close
      // would run before the gateway's own (Fastify closes the plugins loaded last first) and
      // close the stores under the settlements.
      ready.close()
        .then(async () => { await adminApp?.close() })
        .then(async () => { await instance.stop() })
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

/** The admin API's form of a reload outcome: the problems as `check` prints them. */
export function reloadAnswer (outcome: ReloadOutcome): ReloadAnswer {
  return outcome.ok ? outcome : { ok: false, hash: outcome.hash, problems: outcome.problems.map(formatProblem) }
}
