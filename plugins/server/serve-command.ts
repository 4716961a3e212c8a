import { adminListenAddress, adminStartupProblem, buildAdminServer } from '../admin/admin-server.js'
import { ConfigError, formatProblem, loadConfig } from '../config/index.js'
import { buildServer } from './server.js'
import { openServices, serviceEnvFromProcess } from '../gateway/index.js'
import { createUpstreamView } from '../upstream/index.js'

export const SERVE_USAGE = 'serve [file]   start the gateway (config: $GATEWAY_CONFIG or ./gateway.yaml; PORT and HOST override it)'

/** Starts the gateway and resolves with the exit code once SIGINT/SIGTERM closed it gracefully. */
export async function serveCommand (args: readonly string[]): Promise<number> {
  const file = args[0] ?? process.env.GATEWAY_CONFIG ?? './gateway.yaml'
  let loaded
  try {
    loaded = loadConfig(file)
  } catch (err) {
    if (err instanceof ConfigError) {
      for (const p of err.problems) process.stderr.write(formatProblem(p) + '\n')
      process.stderr.write(`${file}: ${err.problems.length} problem(s); the gateway does not start on a bad config\n`)
      return 1
    }
    throw err
  }
  const adminToken = process.env.GATEWAY_ADMIN_TOKEN
  const adminProblem = adminStartupProblem(adminToken, loaded.config.admin)
  if (adminProblem !== null) {
    process.stderr.write(adminProblem + '\n')
    return 1
  }
  const services = await openServices({
    ...serviceEnvFromProcess(),
    defaultTier: loaded.config.limits.default_tier,
    limitsRedisTimeoutMs: loaded.config.limits.redis_timeout_ms,
    unknownKeyTtlMs: loaded.config.auth.unknown_key_ttl_ms,
    unknownKeyCacheMax: loaded.config.auth.unknown_key_cache_max
  })
  // The admin API is not on the public listener: it gets its own, on loopback by default.
  const upstreamView = createUpstreamView()
  const app = await buildServer({ config: loaded.config, services, upstreamView })
  const admin = adminToken ? await buildAdminServer({ config: loaded.config, store: services.store, token: adminToken, clock: services.clock, upstreamView }) : null
  app.addHook('onClose', async () => {
    await admin?.close()
    await services.close()
  })
  const { port, host } = loaded.config.server
  await app.listen({ port, host })
  if (admin) {
    await admin.listen(adminListenAddress(loaded.config.admin))
    app.log.info({ admin: admin.server.address() }, 'admin API listening')
  }
  app.log.info({ config: file, hash: loaded.hash.slice(0, 12) }, 'model gateway ready')
  return await new Promise<number>((resolve) => {
    let closing = false
    const stop = (signal: string): void => {
      if (closing) return
      closing = true
      app.log.info({ signal }, 'shutting down: finishing in-flight requests')
      app.close().then(() => resolve(0), (err: unknown) => {
        app.log.error({ err }, 'shutdown failed')
        resolve(1)
      })
    }
    process.once('SIGINT', () => stop('SIGINT'))
    process.once('SIGTERM', () => stop('SIGTERM'))
  })
}
