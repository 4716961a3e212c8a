// Child: the real gateway as `serve` runs it (GatewayHost: the public listener handing each
// request to the config generation in force, built by buildServer; logger off) with every provider pointed at the upstream:
// every plugin of the composition root (auth, models, wallet hold, settlement, request log), on embedded
// SQLite or, with BENCH_DATABASE_URL, PostgreSQL (see seed.ts).
// BENCH_GATEWAY_CONFIG picks another config file (default: the repository's gateway.yaml);
// BENCH_STORE_WRITES=off keeps holds, settles and log rows in memory (the gateway-nostore bound);
// BENCH_STALLED_URL adds a stalled second member to the openai pool (bench/stalled.ts).
import { configHash } from '../../plugins/foundation/config/index.js'
import { loadConfig } from '../../plugins/apps/gateway/config.js'
import { outcomeObserver } from '../../plugins/apps/gateway/index.js'
import { GatewayHost } from '../../plugins/apps/server/reload.js'
import { mockEnv, REPO_CONFIG, withMockControlHeaders } from '../../test/helpers/gateway.js'
import { BACKLOG, requiredEnv, urlOf } from './addresses.js'
import { withBenchTier, withoutAddressCap, withStalledMember } from './bench-config.js'
import { runChild } from './child-runtime.js'
import { billingCounts, openBenchServices } from './seed.js'
import { ServedCounter } from './served.js'

await runChild(async () => {
  const upstream = requiredEnv('BENCH_UPSTREAM_URL')
  // The process environment wins, so a target can point one provider elsewhere.
  // The mock's control headers (x-mock-chunks: the SSE workload's 20 chunks) must reach it
  // through the gateway's allow-lists as they do through the bare proxy.
  const file = process.env.BENCH_GATEWAY_CONFIG ?? REPO_CONFIG
  const config = withStalledMember(withBenchTier(withoutAddressCap(withMockControlHeaders(loadConfig(file, { ...mockEnv(upstream), ...process.env }).config))))
  const bench = await openBenchServices(config, { storeWrites: process.env.BENCH_STORE_WRITES !== 'off' })
  const served = new ServedCounter()
  const host = await GatewayHost.start({
    file,
    loaded: { config, hash: configHash(config), files: [file], redact: (text) => text },
    services: bench.services,
    logger: false,
    plugins: (defaults) => [...defaults, outcomeObserver(served.onFinish)]
  })
  served.watch(host.server)
  await host.listen(0, '127.0.0.1', BACKLOG)
  return {
    url: urlOf(host.server.address()),
    close: async () => {
      await host.close()
      await bench.services.close()
    },
    report: () => served.report(() => billingCounts(bench))
  }
})
