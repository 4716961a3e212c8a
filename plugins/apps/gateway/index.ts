// The composition root: the gateway built from the plan and the concerns' one list (CONCERNS,
// concerns.ts), with the few services concerns share (the wallet, the jobs service, the hold
// keeper, the idempotency plugin) made here once. The host (plugins/foundation/pipeline) runs
// their phases and knows none of them.
import type { FastifyBaseLogger, FastifyInstance } from 'fastify'
import type { GatewayConfig } from '../../foundation/config/types.js'
import { createJobs, type Jobs } from '../../concerns/jobs/index.js'
import { passthrough, type TranslatorFor } from '../../concerns/metering/index.js'
import type { GatewayMetrics } from '../../concerns/metrics/index.js'
import { idempotencyPlugin, type IdempotencyPlugin } from '../../concerns/idempotency/index.js'
import { modelCatalogue, type ModelCatalogue } from '../../concerns/models/index.js'
import type { Outcome, RequestContext } from '../../foundation/pipeline/context.js'
import { pipelineHost, type PipelineStats } from '../../foundation/pipeline/host.js'
import type { GatewayPlugin } from '../../foundation/pipeline/plugin.js'
import { createStatusReader, openUpstreams, type Upstreams, type UpstreamView } from '../../concerns/upstream/index.js'
import { createHoldKeeper, createWallet, reapExpiredHolds, unrecoveredReporter, type HoldKeeper, type Wallet } from '../../concerns/wallet/index.js'
import { CONCERNS } from './concerns.js'
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
export { CONCERNS } from './concerns.js'

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

/** What a concern's plugin is built from: the gateway's parts and the services concerns share. */
export interface ConcernParts extends GatewayParts {
  /** The ledger's one writer: requests' holds (charge, renewal, settle) and jobs' ends alike. */
  readonly wallet: Wallet
  /** Renews each open hold while its request runs (the wallet's; the metrics count them). */
  readonly keeper: HoldKeeper
  readonly jobs: Jobs
  readonly idempotency: IdempotencyPlugin
  /** Each operation's translator: the passthrough's edits and meter; jobs' target and answer for job routes. */
  readonly translatorFor: TranslatorFor
}

/** The services concerns share, made once per gateway. */
function concernParts (parts: GatewayParts): ConcernParts {
  const { plan, services } = parts
  const metrics = parts.metrics
  // An unrecovered overage, from a request's settle or a job's: one log line and the metric.
  const onUnrecovered = unrecoveredReporter(parts.log, metrics === undefined ? undefined : (amount) => { metrics.recordUnrecovered(amount) })
  const wallet = createWallet({ ledger: services.store.ledger, onUnrecovered })
  const idempotency = idempotencyPlugin({ store: services.store.idempotency })
  // A job create's idempotency key names its job once the job is recorded. The watcher reads
  // job statuses through the upstream concern's reader, on the plan's upstreams (the forward
  // phase's pools).
  const jobs = createJobs({
    plan,
    jobs: services.store.jobs,
    wallet,
    clock: services.clock,
    log: parts.log,
    reader: createStatusReader(parts.upstreams),
    onCreated: async (ctx, job) => { await idempotency.jobCreated(ctx, job.id) }
  })
  // Shared by the wallet (it keeps holds) and the metrics (they count them).
  const keeper = createHoldKeeper({ wallet, warn: (fields) => { parts.log.warn(fields, 'hold renewal') } })
  const view = parts.upstreamView
  metrics?.use({
    holdsOutstanding: () => keeper.size(),
    requestLogPending: () => services.requestLog.pending,
    // The breaker's state as the admin API shows it, read when Prometheus scrapes.
    ...(view ? { circuits: () => view.read?.().providers ?? [] } : {})
  })
  return { ...parts, wallet, keeper, jobs, idempotency, translatorFor: jobs.translatorFor(passthrough) }
}

/**
 * The concerns' plugins, in the order their hooks run in every phase (CONCERNS); a concern the
 * config leaves out (metrics without a registry, a disabled access log) is not listed. Each
 * concern's plugin module is loaded here, not when the config is.
 */
export async function gatewayPlugins (parts: GatewayParts): Promise<GatewayPlugin[]> {
  const shared = concernParts(parts)
  // Every concern's plugin asks only for parts the gateway has (one that asks for a part it lacks fails the type check here).
  const listed: ReadonlyArray<{ readonly plugin?: (parts: ConcernParts) => Promise<GatewayPlugin | undefined> }> = CONCERNS
  const plugins = await Promise.all(listed.map(async (c) => await c.plugin?.(shared)))
  return plugins.filter((p): p is GatewayPlugin => p !== undefined)
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
  const defaults = await gatewayPlugins({
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
