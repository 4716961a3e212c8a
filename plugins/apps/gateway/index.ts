// The composition root: which concerns a request goes through, in order. The host
// (plugins/foundation/pipeline) runs their phases and knows none of them; a new concern is a folder that
// exports a GatewayPlugin plus one line in `gatewayPlugins` below.
import type { FastifyBaseLogger, FastifyInstance } from 'fastify'
import { admissionPlugin } from '../../concerns/admission/index.js'
import { authPlugin } from '../../concerns/auth/index.js'
import { capsPlugin } from '../../concerns/caps/index.js'
import type { GatewayConfig } from '../../foundation/config/types.js'
import { createJobs, jobsPlugin } from '../../concerns/jobs/index.js'
import { accessLogPlugin } from '../../concerns/access-log/index.js'
import { limitsPlugin } from '../../concerns/limits/index.js'
import { listingsPlugin } from '../../concerns/listings/index.js'
import { passthrough } from '../../concerns/metering/index.js'
import { metricsPlugin, type GatewayMetrics } from '../../concerns/metrics/index.js'
import { idempotencyPlugin } from '../../concerns/idempotency/index.js'
import { modelCatalogue, modelsPlugin, type ModelCatalogue } from '../../concerns/models/index.js'
import { featuresPlugin, operationsPlugin } from '../../foundation/operations/index.js'
import type { Outcome, RequestContext } from '../../foundation/pipeline/context.js'
import { pipelineHost, type PipelineStats } from '../../foundation/pipeline/host.js'
import type { GatewayPlugin } from '../../foundation/pipeline/plugin.js'
import { requestPlugin } from '../../foundation/request/index.js'
import { requestLogPlugin } from '../../concerns/request-log/index.js'
import { createStatusReader, openUpstreams, upstreamPlugin, type Upstreams, type UpstreamView } from '../../concerns/upstream/index.js'
import { createHoldKeeper, createWallet, reapExpiredHolds, unrecoveredReporter, walletPlugin } from '../../concerns/wallet/index.js'
import { createImagePauseStore } from '../../foundation/store/image-pause.js'
import { createModelStatusStore } from '../../foundation/store/model-status.js'
import { compilePlan, type GatewayPlan } from './plan.js'
import { openServices, serviceEnvFromProcess, type GatewayServices, type ServiceEnv } from './services.js'

export type { Outcome, RequestContext, RequestState } from '../../foundation/pipeline/context.js'
export type { GatewayPlugin, ForwardControl, PhaseName } from '../../foundation/pipeline/plugin.js'
export { gatewayClientErrors, gatewayFrameworkErrors, type PipelineStats } from '../../foundation/pipeline/host.js'
export { newRequestId } from '../../foundation/pipeline/request-id.js'
export { openServices, serviceEnvFromProcess, type GatewayServices, type ServiceEnv } from './services.js'
export { listenFailure, startupLine } from './startup-error.js'
export { checkConfig, CONFIG_CONCERNS, loadConfig } from './config.js'
export { compilePlan, PLAN_COMPILED_CHANNEL, PLAN_STEPS, type GatewayPlan, type PlanCompiledMessage, type PlanSlices } from './plan.js'

export interface GatewayOptions {
  config: GatewayConfig
  /**
   * The plan of `config` (compilePlan), when the caller already compiled it (the server does,
   * once per config generation); without it the gateway compiles it, once.
   */
  plan?: GatewayPlan
  /**
   * The stores, key cache and request log behind the gateway. Without it the gateway opens
   * them itself from the environment, as `npm start` does (DATABASE_URL, REDIS_URL,
   * GATEWAY_DATA_DIR, GATEWAY_SECRET), and closes them when the app closes.
   */
  services?: GatewayServices
  /** Overrides of the environment the services are opened from (when `services` is not given). */
  env?: ServiceEnv
  /** Injected randomness for the weighted upstream pick. */
  random?: () => number
  /** Live counts (requests in flight) a standalone server reads to shut down gracefully. */
  stats?: PipelineStats
  /** Changes the plugin list (tests add a plugin; the bench measures a subset). */
  plugins?: (defaults: GatewayPlugin[]) => GatewayPlugin[]
  /** Filled with a reader of the upstreams' circuit state (the admin API's GET /upstreams). */
  upstreamView?: UpstreamView
  /** Where the metrics concern counts (no metrics hook at all without it). */
  metrics?: GatewayMetrics
}

export interface GatewayParts {
  /** The config's plan: every concern reads its slice of it. */
  plan: GatewayPlan
  services: GatewayServices
  /** The plan's models with the stored statuses over them (one per gateway). */
  models: ModelCatalogue
  /** The plan's upstreams, opened once per gateway: the forward phase and the job watcher share them. */
  upstreams: Upstreams
  log: FastifyBaseLogger
  random?: () => number
  upstreamView?: UpstreamView
  /** The instance's metrics; absent: the metrics concern is not in the list (no cost per request). */
  metrics?: GatewayMetrics
}

/** The concerns of a request, in the order their hooks run in every phase. */
export function gatewayPlugins (parts: GatewayParts): GatewayPlugin[] {
  const { plan, services, models, upstreams } = parts
  const { config } = plan
  const { store, clock } = services
  // An unrecovered overage, from a request's settle or a job's: one log line and the metric.
  const metrics = parts.metrics
  const onUnrecovered = unrecoveredReporter(parts.log, metrics === undefined ? undefined : (amount) => { metrics.recordUnrecovered(amount) })
  // The ledger's one writer: requests' holds (charge, renewal, settle) and jobs' ends alike.
  const wallet = createWallet({ ledger: store.ledger, onUnrecovered })
  const idempotency = idempotencyPlugin({ store: store.idempotency })
  // A job create's idempotency key names its job once the job is recorded. The watcher reads
  // job statuses through the upstream concern's reader, on the plan's upstreams (the forward
  // phase's pools).
  const jobs = createJobs({
    plan,
    jobs: store.jobs,
    wallet,
    clock,
    log: parts.log,
    reader: createStatusReader(upstreams),
    onCreated: async (ctx, job) => { await idempotency.jobCreated(ctx, job.id) }
  })
  // Shared by the wallet (it keeps holds) and the metrics (they count them).
  const keeper = createHoldKeeper({ wallet, warn: (fields) => { parts.log.warn(fields, 'hold renewal') } })
  const view = parts.upstreamView
  parts.metrics?.use({
    holdsOutstanding: () => keeper.size(),
    requestLogPending: () => services.requestLog.pending,
    // The breaker's state as the admin API shows it, read when Prometheus scrapes.
    ...(view ? { circuits: () => view.read?.().providers ?? [] } : {})
  })
  const accessLog = config.observability?.access_log
  // Observability concerns are listed only when configured: off costs nothing per request.
  const observe: GatewayPlugin[] = [
    ...(parts.metrics ? [metricsPlugin(parts.metrics)] : []),
    ...(accessLog === undefined || accessLog.enabled ? [accessLogPlugin(parts.log, accessLog ?? { enabled: true, level: 'info' })] : [])
  ]
  return [
    requestPlugin(plan.bodies),
    // The admin API's model statuses (publish, pause, retire), shared through the store.
    modelsPlugin(models, createModelStatusStore(store.backend)),
    authPlugin({ keyHeaders: plan.keyHeaders, store, cache: services.keyCache, clock }),
    // After auth (the key's policy), before anything reads the body or holds money.
    limitsPlugin({ server: config.server, limits: config.limits, policies: plan.limits, clock, redis: services.limitsRedis, log: parts.log }),
    // The platform image pause: the config's day, or the admin API's (shared through the store).
    capsPlugin({ pauses: createImagePauseStore(store.backend), clock, pausedOn: config.limits.images_paused_on }),
    jobsPlugin(jobs, { watch: config.jobs.watcher.enabled }),
    operationsPlugin(),
    // After the model is known, before the hold: refusals the request earns by itself.
    admissionPlugin(plan.admission),
    // After admission (a tier the model does not serve is refused as such), before the hold.
    featuresPlugin(),
    // Before the wallet: a duplicate is refused before it holds anything.
    idempotency,
    walletPlugin({ wallet, models, clock, config: config.wallet, limits: config.limits, log: parts.log, keeper }),
    // Answers the listing routes itself, in place of the upstream (nothing held, nothing sent).
    listingsPlugin({ routes: plan.routes, models }),
    upstreamPlugin({
      plan,
      models,
      upstreams,
      // Each operation's translator: the passthrough's edits and meter; jobs' target and answer for job routes.
      translatorFor: jobs.translatorFor(passthrough),
      ...(parts.random ? { random: parts.random } : {}),
      ...(parts.upstreamView ? { view: parts.upstreamView } : {}),
      onHealthCheckError: (provider, err) => { parts.log.warn({ provider, code: (err as { code?: string }).code }, 'upstream health check failed') }
    }),
    requestLogPlugin({ writer: services.requestLog, clock }),
    ...observe
  ]
}

/** A plugin whose finish hook reports each request's outcome (tests and the bench observe with it). */
export function outcomeObserver (onFinish: (ctx: RequestContext, outcome: Outcome) => void): GatewayPlugin {
  return { name: 'outcome-observer', finish: onFinish }
}

/**
 * The whole gateway as a Fastify plugin: every phase, on the same stores and environment as
 * the standalone server. Register it on a fresh instance (the server does) or inside an
 * existing app, whose own routes it leaves alone.
 */
export async function modelGateway (app: FastifyInstance, opts: GatewayOptions): Promise<void> {
  const { config } = opts
  if (opts.plan !== undefined && opts.plan.config !== config) throw new TypeError('modelGateway: `plan` is not the plan of `config`')
  const plan = opts.plan ?? compilePlan(config)
  const owned = opts.services === undefined
  const services = opts.services ?? await openServices({
    ...serviceEnvFromProcess(),
    defaultTier: config.limits.default_tier,
    limitsRedisTimeoutMs: config.limits.redis_timeout_ms,
    ...(opts.env ?? {})
  })
  const models = modelCatalogue(plan.models)
  const upstreams = openUpstreams(plan.upstream)
  const defaults = gatewayPlugins({
    plan,
    services,
    models,
    upstreams,
    log: app.log,
    ...(opts.random ? { random: opts.random } : {}),
    ...(opts.upstreamView ? { upstreamView: opts.upstreamView } : {}),
    ...(opts.metrics ? { metrics: opts.metrics } : {})
  })
  const plugins = opts.plugins ? opts.plugins(defaults) : defaults
  // Every instance releases holds whose instance died (their expiry passed).
  const reaper = reapExpiredHolds(createWallet({ ledger: services.store.ledger }), config.wallet.reaper_interval_ms, app.log)
  // Listed first, so it closes last: after every request settled and every other plugin closed.
  const lifecycle: GatewayPlugin = {
    name: 'services',
    close: async () => {
      reaper.stop()
      await upstreams.close()
      if (owned) await services.close()
    }
  }
  await app.register(pipelineHost, { plan, plugins: [lifecycle, ...plugins], ...(opts.stats ? { stats: opts.stats } : {}) })
  // The account console is no phase of a model request: its own routes, on the same store.
  // Loaded only when enabled, so the CLI and a gateway without a console never load its modules.
  if (config.console.enabled) {
    const { CONSOLE_PREFIX, consolePlugin } = await import('../console/index.js')
    await app.register(consolePlugin, { prefix: CONSOLE_PREFIX, config, catalogue: plan.catalogue, store: services.store, clock: services.clock })
  }
}
