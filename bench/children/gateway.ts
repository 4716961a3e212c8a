// Child: the real gateway (buildServer, logger off) with every provider pointed at the upstream.
// BENCH_GATEWAY_CONFIG picks another config file (default: the repository's gateway.yaml).
import { loadConfig } from '../../plugins/config/index.js'
import { buildServer } from '../../plugins/gateway/server.js'
import { mockEnv, REPO_CONFIG } from '../../test/helpers/gateway.js'
import { BACKLOG, requiredEnv, urlOf } from './addresses.js'
import { runChild } from './child-runtime.js'
import { openBenchServices } from './seed.js'

await runChild(async () => {
  const upstream = requiredEnv('BENCH_UPSTREAM_URL')
  // The process environment wins, so a target can point one provider elsewhere.
  const { config } = loadConfig(process.env.BENCH_GATEWAY_CONFIG ?? REPO_CONFIG, { ...mockEnv(upstream), ...process.env })
  const services = await openBenchServices(config)
  const app = await buildServer({ config, services, logger: false })
  app.addHook('onClose', async () => { await services.close() })
  await app.listen({ port: 0, host: '127.0.0.1', backlog: BACKLOG })
  return { url: urlOf(app.server.address()), close: () => app.close() }
})
