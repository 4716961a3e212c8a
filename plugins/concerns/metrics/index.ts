// The metrics concern: Prometheus counters, histograms and gauges of the gateway's requests,
// filled by a finish hook (and a resolve hook counting open streams), served as text by
// `metricsRoute` on the listener the config names (docs/operations.md).
//
// Per request the hooks add numbers to cells found by object identity (route plan, model) and
// the error code: no label string is built, no prom-client hashing runs (see cells.ts). Gauges
// that describe the instance (holds being kept, request log queue) are read at scrape time.
import type { FastifyInstance } from 'fastify'
import { collectDefaultMetrics, Counter, Gauge, Registry } from 'prom-client'
import { answersAsStream, type Outcome, type RequestContext } from '../../foundation/pipeline/context.js'
import type { GatewayPlugin } from '../../foundation/pipeline/plugin.js'
import type { RoutePlan } from '../../foundation/routes/compile.js'
import { CellCounter, CellHistogram, CellIndex, type CounterCell, type HistogramCell } from './cells.js'
import type { CompiledModel } from '../../foundation/shapes/index.js'

declare module '../../foundation/pipeline/context.js' {
  interface RequestState {
    /** True once the metrics counted this request as an open stream (until its finish). */
    metricsStream: boolean
  }
}

/** Seconds; from sub-millisecond gateway overhead to long generations. */
const OVERHEAD_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1]
const UPSTREAM_BUCKETS = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120]

/** Values of `gateway_circuit_state` (the circuit breaker sets them; see docs/operations.md). */
export const CIRCUIT_STATE = Object.freeze({ closed: 0, half_open: 1, open: 2 })

/** Instance facts read at scrape time. */
export interface MetricSources {
  /** Wallet holds this instance is keeping open (renewing) now. */
  holdsOutstanding?: () => number
  /** Request log rows accepted and not yet stored. */
  requestLogPending?: () => number
  /** Each provider's circuit state (the upstream concern's breaker), read at scrape time. */
  circuits?: () => ReadonlyArray<{ name: string, state: keyof typeof CIRCUIT_STATE }>
}

interface RequestCells {
  /** By error code ('OK' for none). */
  readonly byCode: Map<string, CounterCell>
  /** Created at the first upstream answer (a refused request has none). */
  upstream: HistogramCell | null
}

interface ModelCells {
  readonly input: CounterCell
  readonly output: CounterCell
  readonly spend: CounterCell
}

/** The metrics of one gateway instance: its registry, and the hook points other concerns use. */
export class GatewayMetrics {
  readonly registry = new Registry()
  /**
   * The hook for circuit breakers: `circuitState.set({ provider }, CIRCUIT_STATE.open)` at each
   * transition (never per request). Registered here so it is exported whether or not a breaker
   * exists; an absent breaker leaves it without series.
   */
  readonly circuitState: Gauge<'provider'>
  /** Requests this instance is streaming an answer to (counted from resolve until finish). */
  openStreams = 0
  private sources: MetricSources = {}

  private readonly requests: CellCounter
  private readonly upstreamSeconds: CellHistogram
  private readonly overheadSeconds: CellHistogram
  private readonly tokens: CellCounter
  private readonly spend: CellCounter
  private readonly byRoute: CellIndex<RoutePlan, CompiledModel | null, RequestCells>
  /** Instance gauges read at scrape time (open streams, holds, request log queue). */
  readonly gauges: readonly Gauge[]
  private readonly overheadByRoute = new Map<RoutePlan, HistogramCell>()
  /** Reported costs beyond an account's bound, not posted: the operator's loss (rare; no labels). */
  private readonly unrecoveredAmount: Counter
  private readonly unrecoveredCount: Counter
  private readonly byModel = new Map<CompiledModel, ModelCells>()

  constructor (opts: { defaultMetrics?: boolean } = {}) {
    const registry = this.registry
    this.requests = new CellCounter('gateway_requests_total', 'Requests by route, model and error code (code="OK" when answered without error).', registry)
    this.upstreamSeconds = new CellHistogram('gateway_upstream_latency_seconds', 'Time from the upstream call to the end of its answer, by route and model.', UPSTREAM_BUCKETS, registry)
    this.overheadSeconds = new CellHistogram('gateway_overhead_seconds', 'Gateway time of a request besides the upstream (before the call and after its headers), by route.', OVERHEAD_BUCKETS, registry)
    this.tokens = new CellCounter('gateway_tokens_total', 'Tokens metered by model and direction (input, output).', registry)
    this.spend = new CellCounter('gateway_spend_total', 'Amount billed (currency units) by model.', registry)
    this.byRoute = new CellIndex(() => ({ byCode: new Map(), upstream: null }))
    this.unrecoveredAmount = new Counter({ name: 'gateway_unrecovered_overage_total', help: 'Reported cost beyond accounts\' bounds (wallet floor − tier overdraft), not posted: the operator\'s loss, in currency units.', registers: [registry] })
    this.unrecoveredCount = new Counter({ name: 'gateway_unrecovered_overages_total', help: 'Settles (requests and jobs) that left part of a reported cost unrecovered.', registers: [registry] })

    const self = this
    this.gauges = [
      new Gauge({ name: 'gateway_open_streams', help: 'Streamed answers in progress on this instance.', registers: [registry], collect () { this.set(self.openStreams) } }),
      new Gauge({ name: 'gateway_holds_outstanding', help: 'Wallet holds this instance keeps open for requests in progress.', registers: [registry], collect () { this.set(self.sources.holdsOutstanding?.() ?? 0) } }),
      new Gauge({ name: 'gateway_request_log_queue_depth', help: 'Request log rows accepted and not yet stored.', registers: [registry], collect () { this.set(self.sources.requestLogPending?.() ?? 0) } })
    ]
    this.circuitState = new Gauge({
      name: 'gateway_circuit_state',
      help: 'Circuit state per provider: 0 closed, 1 half-open, 2 open.',
      labelNames: ['provider'],
      registers: [registry],
      collect () {
        for (const c of self.sources.circuits?.() ?? []) this.set({ provider: c.name }, CIRCUIT_STATE[c.state])
      }
    })
    if (opts.defaultMetrics !== false) collectDefaultMetrics({ register: registry, prefix: 'gateway_' })
  }

  /** Where the scrape-time gauges read from (set by the composition root). */
  use (sources: MetricSources): void {
    this.sources = sources
  }

  /** The sources in use (a config reload whose new generation failed to build puts them back). */
  get sourcesInUse (): MetricSources {
    return this.sources
  }

  /** Records one unrecovered overage (its amount in nano-units), whichever settle found it. */
  recordUnrecovered (amount: bigint): void {
    this.unrecoveredCount.inc()
    this.unrecoveredAmount.inc(Number(amount) / 1e9)
  }

  /** Records one finished request. */
  record (ctx: RequestContext, outcome: Outcome): void {
    const plan = ctx.plan
    const model = outcome.answeredModel ?? ctx.model
    const cells = this.byRoute.get(plan, model)
    const code = outcome.errorCode ?? 'OK'
    let counter = cells.byCode.get(code)
    if (counter === undefined) {
      counter = this.requests.cell({ route: plan.id, model: model?.id ?? '', code })
      cells.byCode.set(code, counter)
    }
    counter.value++
    if (outcome.upstreamMs !== null) {
      cells.upstream ??= this.upstreamSeconds.cell({ route: plan.id, model: model?.id ?? '' })
      cells.upstream.observe(outcome.upstreamMs / 1000)
    }
    if (outcome.overheadMs !== null) {
      let overhead = this.overheadByRoute.get(plan)
      if (overhead === undefined) {
        overhead = this.overheadSeconds.cell({ route: plan.id })
        this.overheadByRoute.set(plan, overhead)
      }
      overhead.observe(outcome.overheadMs / 1000)
    }
    const answered = outcome.answeredModel
    if (answered === null) return
    const usage = outcome.usage
    const cost = ctx.state.settled?.cost
    if (usage === null && (cost === undefined || cost === null)) return
    let m = this.byModel.get(answered)
    if (m === undefined) {
      m = {
        input: this.tokens.cell({ model: answered.id, direction: 'input' }),
        output: this.tokens.cell({ model: answered.id, direction: 'output' }),
        spend: this.spend.cell({ model: answered.id })
      }
      this.byModel.set(answered, m)
    }
    if (usage !== null) {
      m.input.value += usage.inputTokens
      m.output.value += usage.outputTokens
    }
    if (cost !== undefined && cost !== null && cost > 0n) m.spend.value += Number(cost) / 1e9
  }
}

/**
 * resolve: counts a streamed answer as open (once, fallbacks included); finish: records the
 * request and closes its stream. Listed after the wallet, so the settled cost is known.
 */
export function metricsPlugin (metrics: GatewayMetrics): GatewayPlugin {
  const plugin: GatewayPlugin = {
    name: 'metrics',
    // Only a route declared to stream, or one whose JSON body may ask to, can open a stream.
    forRoute: (route) => route.response === 'sse' || route.body.includes('json') ? plugin : { finish: plugin.finish },
    resolve (ctx) {
      if (ctx.state.metricsStream !== true && answersAsStream(ctx)) {
        ctx.state.metricsStream = true
        metrics.openStreams++
      }
    },
    finish (ctx, outcome) {
      if (ctx.state.metricsStream === true) metrics.openStreams--
      metrics.record(ctx, outcome)
    }
  }
  return plugin
}

/** GET `path`: the Prometheus text exposition of `metrics` on `app`. */
export function metricsRoute (app: FastifyInstance, metrics: GatewayMetrics, path: string): void {
  app.get(path, async (_req, reply) => {
    const text = await metrics.registry.metrics()
    return reply.header('content-type', metrics.registry.contentType).header('cache-control', 'no-store').send(text)
  })
}
