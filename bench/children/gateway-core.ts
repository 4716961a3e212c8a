// Child: the gateway's core plugins alone (body checks, model resolution, capabilities,
// forwarding): Fastify with the same server options as buildServer, the pipeline host
// registered with those plugins only. BENCH_GATEWAY_STAGES=auth adds the auth plugin on a
// real store (embedded SQLite, or PostgreSQL with BENCH_DATABASE_URL) seeded with BENCH_KEY;
// still no wallet plugin and nothing settled or logged on finish.
// BENCH_GATEWAY_CONFIG picks another config file (default: the repository's gateway.yaml).
import Fastify, { LogController } from 'fastify'
import { authPlugin } from '../../plugins/concerns/auth/index.js'
import { loadConfig } from '../../plugins/apps/gateway/config.js'
import { compilePlan, gatewayFrameworkErrors, newRequestId, outcomeObserver, type GatewayPlugin } from '../../plugins/apps/gateway/index.js'
import { modelCatalogue, modelsPlugin } from '../../plugins/concerns/models/index.js'
import { pipelineHost } from '../../plugins/foundation/pipeline/host.js'
import { requestPlugin } from '../../plugins/foundation/request/index.js'
import { serverBounds } from '../../plugins/foundation/request/server-bounds.js'
import { upstreamPlugin } from '../../plugins/concerns/upstream/index.js'
import { mockEnv, REPO_CONFIG, withMockControlHeaders } from '../../test/helpers/gateway.js'
import { BACKLOG, requiredEnv, urlOf } from './addresses.js'
import { withBenchTier, withoutAddressCap } from './bench-config.js'
import { runChild } from './child-runtime.js'
import { openBenchServices, type BenchServices } from './seed.js'
import { ServedCounter } from './served.js'

const STAGE_SETS = ['none', 'auth'] as const

await runChild(async () => {
  const upstream = requiredEnv('BENCH_UPSTREAM_URL')
  const stageSet = process.env.BENCH_GATEWAY_STAGES ?? 'none'
  if (!(STAGE_SETS as readonly string[]).includes(stageSet)) throw new Error(`BENCH_GATEWAY_STAGES=${stageSet}: expected one of ${STAGE_SETS.join(', ')}`)
  // The mock's control headers (x-mock-chunks: the SSE workload's 20 chunks) must reach it
  // through the gateway's allow-lists as they do through the bare proxy.
  const config = withBenchTier(withoutAddressCap(withMockControlHeaders(loadConfig(process.env.BENCH_GATEWAY_CONFIG ?? REPO_CONFIG, { ...mockEnv(upstream), ...process.env }).config)))
  const plan = compilePlan(config)
  // buildServer's Fastify options (plugins/apps/server/server.ts), logger off as in the gateway child.
  const app = Fastify({
    logger: false,
    bodyLimit: config.server.body_limit_bytes,
    ...serverBounds(config.server),
    genReqId: newRequestId,
    logController: new LogController({ disableRequestLogging: true, requestIdLogLabel: 'requestId' }),
    frameworkErrors: gatewayFrameworkErrors(plan),
    return503OnClosing: true,
    forceCloseConnections: 'idle'
  })
  let bench: BenchServices | undefined
  const models = modelCatalogue(plan.models)
  const plugins: GatewayPlugin[] = [requestPlugin(plan.bodies)]
  if (stageSet === 'auth') {
    bench = await openBenchServices(config)
    const { services } = bench
    plugins.push(authPlugin({ keyHeaders: plan.keyHeaders, store: services.store, cache: services.keyCache, clock: services.clock }))
    app.addHook('onClose', async () => { await services.close() })
  }
  const served = new ServedCounter()
  plugins.push(modelsPlugin(models), upstreamPlugin({ plan, models }), outcomeObserver(served.onFinish))
  await app.register(pipelineHost, { plan, plugins })
  served.watch(app.server)
  await app.listen({ port: 0, host: '127.0.0.1', backlog: BACKLOG })
  return {
    url: urlOf(app.server.address()),
    close: () => app.close(),
    report: () => served.report()
  }
})
