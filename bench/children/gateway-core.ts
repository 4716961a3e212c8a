// Child: the gateway's core chain alone (body checks, model resolution, capabilities,
// forwarding): Fastify with the same server options as buildServer, `modelGateway` registered
// with no stages of its own. BENCH_GATEWAY_STAGES=auth adds authStage + modelAccessStage on a
// real store (embedded SQLite, or PostgreSQL with BENCH_DATABASE_URL) seeded with BENCH_KEY;
// still no wallet stage and nothing settled or logged on finish.
// BENCH_GATEWAY_CONFIG picks another config file (default: the repository's gateway.yaml).
import Fastify, { LogController } from 'fastify'
import { authStage, modelAccessStage } from '../../plugins/auth/auth-stage.js'
import { loadConfig } from '../../plugins/config/index.js'
import { gatewayFrameworkErrors, modelGateway, type Stage } from '../../plugins/gateway/index.js'
import { newRequestId } from '../../plugins/gateway/server.js'
import { mockEnv, REPO_CONFIG, withMockControlHeaders } from '../../test/helpers/gateway.js'
import { BACKLOG, requiredEnv, urlOf } from './addresses.js'
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
  const config = withMockControlHeaders(loadConfig(process.env.BENCH_GATEWAY_CONFIG ?? REPO_CONFIG, { ...mockEnv(upstream), ...process.env }).config)
  // buildServer's Fastify options (plugins/gateway/server.ts), logger off as in the gateway child.
  const app = Fastify({
    logger: false,
    bodyLimit: config.server.body_limit_bytes,
    genReqId: newRequestId,
    logController: new LogController({ disableRequestLogging: true, requestIdLogLabel: 'requestId' }),
    frameworkErrors: gatewayFrameworkErrors(config),
    return503OnClosing: true,
    forceCloseConnections: 'idle'
  })
  let bench: BenchServices | undefined
  const stages: Stage[] = []
  if (stageSet === 'auth') {
    bench = await openBenchServices(config)
    const { services } = bench
    stages.push(authStage({ config: config.auth, store: services.store, cache: services.keyCache, clock: services.clock }), modelAccessStage)
    app.addHook('onClose', async () => { await services.close() })
  }
  const served = new ServedCounter()
  await app.register(modelGateway, { config, stages, onFinish: served.onFinish })
  served.watch(app.server)
  await app.listen({ port: 0, host: '127.0.0.1', backlog: BACKLOG })
  return {
    url: urlOf(app.server.address()),
    close: () => app.close(),
    report: () => served.report()
  }
})
