// Hot reload of gateway.yaml. The public listener is one Node http.Server created once; each
// config is a *generation*: a Fastify app built by buildServer on the same services (store, key
// cache, request log, limits Redis, metrics), handed the requests through its serverFactory
// handler. The server's 'request' listener passes each request to the generation current at
// that moment, so a reload is: load and check the file, build and ready() a new generation, then
// one assignment. A request already dispatched runs to its end in the app it started in (its
// closures hold that config: routes, prices, limits, upstreams); the old generation is closed
// (its timers stop, every settlement awaited) once its last request ended. A file that does not
// load is refused with the `check` report and the running generation keeps serving.
import { EventEmitter } from 'node:events'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { FastifyBaseLogger, FastifyInstance, FastifyServerFactoryHandler, FastifyServerOptions } from 'fastify'
import type { Env } from '../../foundation/config/expand-env.js'
import { ConfigError, formatProblem, type ConfigProblem, type LoadedConfig } from '../../foundation/config/index.js'
import type { PathSegment } from '../../foundation/config/problem.js'
import { stableStringify } from '../../foundation/config/snapshot.js'
import { locateInSources, readSources } from '../../foundation/config/sources.js'
import type { GatewayConfig } from '../../foundation/config/types.js'
import type { GatewayServices } from '../gateway/index.js'
import { compilePlan, gatewayClientErrors, loadConfig, type GatewayPlan } from '../gateway/index.js'
import { GatewayMetrics } from '../../concerns/metrics/index.js'
import { serverBounds } from '../../foundation/request/server-bounds.js'
import { createUpstreamView, type UpstreamView } from '../../concerns/upstream/index.js'
import type { ConfigState } from './readiness.js'
import { buildServer, metricsConfig, type ServerOptions } from './server.js'

/**
 * Config keys a reload cannot change: they are bound to what lives as long as the process (the
 * listener's address, the admin listener, the metrics registry and where it is served, the
 * services opened at start). A file that changes one is refused; it needs a restart.
 */
export const RESTART_ONLY: ReadonlyArray<{ path: readonly PathSegment[], why: string }> = [
  { path: ['server', 'host'], why: 'the public listener is bound once' },
  { path: ['server', 'port'], why: 'the public listener is bound once' },
  { path: ['admin'], why: 'the admin listener, its token rules and throttle are set up once' },
  { path: ['observability', 'metrics'], why: 'the metrics registry and where it is served are set up once' },
  { path: ['limits', 'default_tier'], why: 'the store is opened with it' },
  { path: ['limits', 'redis_timeout_ms'], why: 'the limits Redis connection is opened with it' },
  { path: ['auth', 'unknown_key_ttl_ms'], why: 'the key cache is built with it' },
  { path: ['auth', 'unknown_key_cache_max'], why: 'the key cache is built with it' }
]

function valueAt (config: unknown, path: readonly PathSegment[]): unknown {
  let value: unknown = config
  for (const seg of path) value = value !== null && typeof value === 'object' ? (value as Record<string | number, unknown>)[seg] : undefined
  return value
}

/** The RESTART_ONLY keys whose value differs between the running config and the file's, located in the file. */
export function restartOnlyProblems (running: GatewayConfig, next: GatewayConfig, file: string, env: Env): ConfigProblem[] {
  const changed = RESTART_ONLY.filter(({ path }) => stableStringify(valueAt(running, path)) !== stableStringify(valueAt(next, path)))
  if (changed.length === 0) return []
  const sources = readSources(file, env)
  return changed.map(({ path, why }) => locateInSources(sources, {
    path: [...path],
    message: `differs from the running config and a reload cannot change it (${why}): restart the instance to apply it`
  }))
}

export type ReloadOutcome =
  | { ok: true, hash: string, previousHash: string, changed: boolean }
  | { ok: false, hash: string, problems: ConfigProblem[] }

export interface GatewayHostOptions extends Omit<ServerOptions, 'config' | 'plan' | 'services' | 'serverFactory' | 'configState' | 'loggerInstance' | 'metrics' | 'upstreamView'> {
  /** The file reloads read (the one `loaded` came from). */
  file: string
  loaded: LoadedConfig
  services: GatewayServices
  /** The environment `${VAR}` references expand from on reload (default process.env). */
  env?: Env
  logger?: FastifyServerOptions['logger']
  /** The metrics shared by every generation (default one built when enabled; null: none). */
  metrics?: GatewayMetrics | null
  upstreamView?: UpstreamView
  /** Awaited after each swap, before the reload answers (the instance registry records the new hash). */
  onSwap?: (hash: string) => Promise<void> | void
}

/**
 * What a generation's Fastify app takes for its server: Fastify adds its 'clientError' listener
 * here and the connection cap its 'connection' listener; the host relays those events of the real
 * server to the current generation. Never listens, never closes the real server.
 */
class GenerationServer extends EventEmitter {
  constructor (private readonly shared: Server) { super() }
  get listening (): boolean { return false }
  address (): ReturnType<Server['address']> { return this.shared.address() }
  close (callback?: (err?: Error) => void): this {
    if (callback) process.nextTick(callback)
    return this
  }

  closeAllConnections (): void {}
  closeIdleConnections (): void {}
}

interface Generation {
  readonly app: FastifyInstance
  readonly handler: FastifyServerFactoryHandler
  readonly events: GenerationServer
  readonly config: GatewayConfig
  readonly hash: string
  /** The config compiled, once: everything the generation serves reads it. */
  readonly plan: GatewayPlan
  /** Requests dispatched to it whose response has not closed yet. */
  inflight: number
  /** Replaced by a newer generation: closed once `inflight` is 0. */
  retired: boolean
  closed: Promise<void> | null
}

/** Applies the `server` timeouts to the shared listener (all but Node's checking interval can change live). */
function applyBounds (server: Server, config: GatewayConfig): void {
  const bounds = serverBounds(config.server)
  server.keepAliveTimeout = bounds.keepAliveTimeout
  server.requestTimeout = bounds.requestTimeout
  server.headersTimeout = bounds.http.headersTimeout ?? server.headersTimeout
  server.setTimeout(bounds.connectionTimeout)
}

/** The public side of `serve`: one listener, the config generations behind it, reload and shutdown. */
export class GatewayHost {
  readonly server: Server
  readonly file: string
  readonly metrics: GatewayMetrics | null
  readonly upstreamView: UpstreamView
  private current!: Generation
  private readonly live = new Set<Generation>()
  private readonly opts: GatewayHostOptions
  private readonly env: Env
  private logger: FastifyBaseLogger | undefined
  private lastError: string | null = null
  private reloading: Promise<unknown> = Promise.resolve()
  private closing: Promise<void> | null = null
  /** When the config was last swapped by a reload (null: never). */
  reloadedAt: Date | null = null

  private constructor (opts: GatewayHostOptions) {
    this.opts = opts
    this.file = opts.file
    this.env = opts.env ?? process.env
    const settings = metricsConfig(opts.loaded.config)
    this.metrics = opts.metrics !== undefined
      ? opts.metrics
      : settings.enabled ? new GatewayMetrics({ defaultMetrics: settings.default_metrics }) : null
    this.upstreamView = opts.upstreamView ?? createUpstreamView()
    const bounds = serverBounds(opts.loaded.config.server)
    this.server = createServer(bounds.http)
    applyBounds(this.server, opts.loaded.config)
    this.server.on('request', (req: IncomingMessage, res: ServerResponse) => {
      const gen = this.current
      gen.inflight++
      res.once('close', () => {
        gen.inflight--
        if (gen.inflight === 0 && gen.retired) this.retire(gen).catch(() => {})
      })
      gen.handler(req, res)
    })
    this.server.on('connection', (socket) => { this.current.events.emit('connection', socket) })
    this.server.on('clientError', (err, socket) => {
      if (this.current.events.listenerCount('clientError') > 0) this.current.events.emit('clientError', err, socket)
      else socket.destroy()
    })
  }

  static async start (opts: GatewayHostOptions): Promise<GatewayHost> {
    const host = new GatewayHost(opts)
    host.current = await host.build(opts.loaded.config, opts.loaded.hash)
    host.live.add(host.current)
    return host
  }

  /** The current generation's app (its logger, its routes for inject()). */
  get app (): FastifyInstance { return this.current.app }
  get config (): GatewayConfig { return this.current.config }
  get hash (): string { return this.current.hash }
  /** The current generation's plan. */
  get plan (): GatewayPlan { return this.current.plan }
  get log (): FastifyBaseLogger { return this.current.app.log }
  /** What /readyz reports: the served hash, and why the last reload was refused (null when it was not). */
  get state (): ConfigState { return { hash: this.current.hash, file: this.file, lastReloadError: this.lastError } }
  /** Generations still open (the current one, and retired ones whose requests are running). */
  get generations (): number { return this.live.size }

  async listen (port: number, host: string, backlog?: number): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      const fail = (err: Error): void => { reject(err) }
      this.server.once('error', fail)
      this.server.listen({ port, host, ...(backlog !== undefined ? { backlog } : {}) }, () => {
        this.server.off('error', fail)
        resolve()
      })
    })
  }

  private async build (config: GatewayConfig, hash: string): Promise<Generation> {
    const { file: _file, loaded: _loaded, services, env: _env, onSwap: _onSwap, logger, ...rest } = this.opts
    let handler: FastifyServerFactoryHandler | undefined
    const events = new GenerationServer(this.server)
    // The generation's one compile of its config; swapped whole with the generation.
    const plan = compilePlan(config, hash)
    const app = await buildServer({
      ...rest,
      config,
      plan,
      services,
      metrics: this.metrics,
      upstreamView: this.upstreamView,
      ...(this.logger !== undefined ? { loggerInstance: this.logger } : logger !== undefined ? { logger } : {}),
      configState: () => this.state,
      serverFactory: (h) => {
        handler = h
        return events as unknown as Server
      }
    })
    try {
      await app.ready()
    } catch (err) {
      await app.close().catch(() => {})
      throw err
    }
    if (handler === undefined) throw new Error('the generation got no request handler')
    this.logger ??= app.log
    // Fastify attached its clientError handler to `events`; keep the gateway's envelope in it.
    if (events.listenerCount('clientError') === 0) events.on('clientError', gatewayClientErrors(plan))
    return { app, handler, events, config, hash, plan, inflight: 0, retired: false, closed: null }
  }

  /**
   * Reads the file again and swaps to it when it loads and changes nothing restart-only. One
   * reload at a time: a reload asked for while one runs waits for it, then reads the file.
   */
  async reload (): Promise<ReloadOutcome> {
    const run = this.reloading.then(async () => await this.reloadNow())
    this.reloading = run.catch(() => {})
    return await run
  }

  private async reloadNow (): Promise<ReloadOutcome> {
    const running = this.current
    if (this.closing !== null) return this.refuse(running, [{ file: this.file, line: 0, column: 0, path: '', message: 'the instance is shutting down' }])
    let loaded: LoadedConfig
    try {
      loaded = loadConfig(this.file, this.env)
    } catch (err) {
      if (err instanceof ConfigError) return this.refuse(running, err.problems)
      return this.refuse(running, [{ file: this.file, line: 0, column: 0, path: '', message: err instanceof Error ? err.message : String(err) }])
    }
    const problems = restartOnlyProblems(running.config, loaded.config, this.file, this.env)
    if (problems.length > 0) return this.refuse(running, problems)
    if (loaded.hash === running.hash) {
      this.lastError = null
      running.app.log.info({ config: this.file, hash: running.hash.slice(0, 12) }, 'config reload: unchanged')
      return { ok: true, hash: running.hash, previousHash: running.hash, changed: false }
    }
    // Building the new generation points the shared upstream view and metrics sources at it:
    // when it fails, they are pointed back.
    const view = this.upstreamView.read
    const sources = this.metrics?.sourcesInUse
    let next: Generation
    try {
      next = await this.build(loaded.config, loaded.hash)
    } catch (err) {
      this.upstreamView.read = view
      if (sources !== undefined) this.metrics?.use(sources)
      // A build failure may quote a config value: one from the environment is named, not shown.
      return this.refuse(running, [{ file: this.file, line: 0, column: 0, path: '', message: `the new config could not be built: ${loaded.redact(err instanceof Error ? err.message : String(err))}` }])
    }
    // The swap: every request from here on goes to `next`.
    this.current = next
    this.live.add(next)
    applyBounds(this.server, loaded.config)
    running.retired = true
    this.lastError = null
    this.reloadedAt = new Date()
    const inflightOnPrevious = running.inflight
    if (running.inflight === 0) this.retire(running).catch(() => {})
    // Recorded before the reload is reported (log line, admin answer): whoever sees
    // "config reloaded" finds the new hash in the instances list too.
    try {
      await this.opts.onSwap?.(loaded.hash)
    } catch (err) {
      next.app.log.warn({ err }, 'config reloaded; recording the new hash failed')
    }
    next.app.log.info({ config: this.file, hash: loaded.hash.slice(0, 12), previousHash: running.hash.slice(0, 12), inflightOnPrevious }, 'config reloaded')
    return { ok: true, hash: loaded.hash, previousHash: running.hash, changed: true }
  }

  private refuse (running: Generation, problems: ConfigProblem[]): ReloadOutcome {
    const lines = problems.map(formatProblem)
    this.lastError = `${this.file}: ${problems.length} problem(s): ${lines.join('; ')}`
    // The check report, one line per problem, then the summary (the running config keeps serving).
    for (const line of lines) running.app.log.error({ problem: line }, 'config reload refused: ' + line)
    running.app.log.error({ config: this.file, problems: problems.length, hash: running.hash.slice(0, 12) }, 'config reload refused: the running config keeps serving')
    return { ok: false, hash: running.hash, problems }
  }

  /** Closes a generation whose requests all ended: its timers stop, its settlements are awaited; the shared services stay open. */
  private async retire (gen: Generation): Promise<void> {
    gen.closed ??= gen.app.close().then(() => {
      this.live.delete(gen)
      gen.app.log.info({ hash: gen.hash.slice(0, 12) }, 'previous config closed: its last request ended')
    }, (err: unknown) => {
      this.live.delete(gen)
      gen.app.log.error({ err }, 'closing the previous config failed')
    })
    await gen.closed
  }

  /**
   * The graceful shutdown: stop accepting, let the answers in flight finish (up to
   * server.shutdown_grace_ms), close every connection, then close every generation (each waits
   * until its requests are settled). The services are the caller's to close afterwards.
   */
  async close (): Promise<void> {
    this.closing ??= this.shutdown()
    await this.closing
  }

  private async shutdown (): Promise<void> {
    await this.reloading
    for (const gen of this.live) gen.app.gatewayStats.closing = true
    const closed = new Promise<void>((resolve) => {
      if (!this.server.listening) { resolve(); return }
      this.server.close(() => { resolve() })
    })
    this.server.closeIdleConnections()
    const deadline = Date.now() + this.current.config.server.shutdown_grace_ms
    const inflight = (): number => [...this.live].reduce((n, g) => n + g.inflight, 0)
    while (inflight() > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 25))
    this.server.closeAllConnections()
    await closed
    await Promise.all([...this.live].map(async (gen) => {
      gen.closed ??= gen.app.close()
      await gen.closed
    }))
    this.live.clear()
  }
}
