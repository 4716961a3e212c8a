// Readiness: whether this instance can serve. It asks the database (one trivial statement),
// Redis (a PING through the invalidation bus, when REDIS_URL is set) and reports the config it
// serves (its hash, and the last reload's refusal if one was refused). 200 when every check
// passed, 503 otherwise; each check is bounded by a timeout so a hung dependency answers 503.
// The public GET /readyz says only the status; GET /admin/v1/readyz says everything.
import type { FastifyInstance } from 'fastify'
import type { Store } from '../../foundation/store/types.js'

export interface ConfigState {
  /** sha256 of the config being served (as `check` prints it). */
  readonly hash: string
  /** The file it was loaded from. */
  readonly file?: string
  /** The last reload's problems when it was refused (the old config still serves), else null. */
  readonly lastReloadError?: string | null
}

type Check = { ok: true, ms: number } | { ok: false, ms: number, error: string }

const CHECK_TIMEOUT_MS = 2000

async function timed (run: () => Promise<unknown> | unknown): Promise<Check> {
  const started = performance.now()
  let timer: NodeJS.Timeout | undefined
  try {
    await Promise.race([
      Promise.resolve().then(run),
      new Promise((_resolve, reject) => { timer = setTimeout(() => reject(new Error(`no answer within ${CHECK_TIMEOUT_MS} ms`)), CHECK_TIMEOUT_MS) })
    ])
    return { ok: true, ms: Math.round(performance.now() - started) }
  } catch (err) {
    // The cause only (a driver message); never a connection string.
    const message = err instanceof Error ? err.message.split('\n', 1)[0] ?? 'failed' : 'failed'
    return { ok: false, ms: Math.round(performance.now() - started), error: message }
  } finally {
    clearTimeout(timer)
  }
}

export function databaseCheck (store: Store): () => Promise<Check> {
  const backend = store.backend
  if (backend.kind === 'pg') return async () => await timed(async () => await backend.pool.query('select 1'))
  const statement = backend.db.prepare('select 1')
  return async () => await timed(() => statement.get())
}

/** Everything the instance knows about its readiness (the admin listener's answer). */
export interface ReadinessReport {
  status: 'ready' | 'not_ready' | 'closing'
  checks?: {
    database: { kind: Store['kind'] } & Check
    redis: { configured: false } | ({ configured: true } & Check)
    config: { ok: true, hash: string, last_reload_error: string | null }
  }
}

export interface ReadinessProbe {
  report (): Promise<ReadinessReport>
}

export interface ReadinessOptions {
  store: Store
  redis: boolean
  config: () => ConfigState
  closing?: () => boolean
}

export function readinessProbe (opts: ReadinessOptions): ReadinessProbe {
  const database = databaseCheck(opts.store)
  return {
    async report () {
      // A closing instance is not ready: a load balancer stops sending it requests.
      if (opts.closing?.() === true) return { status: 'closing' }
      const [db, redis] = await Promise.all([
        database(),
        opts.redis ? timed(async () => await opts.store.bus.ready()) : Promise.resolve(null)
      ])
      const config = opts.config()
      return {
        status: db.ok && (redis === null || redis.ok) ? 'ready' : 'not_ready',
        checks: {
          database: { kind: opts.store.kind, ...db },
          redis: redis === null ? { configured: false } : { configured: true, ...redis },
          config: { ok: true, hash: config.hash, last_reload_error: config.lastReloadError ?? null }
        }
      }
    }
  }
}

/**
 * GET /readyz on the public listener: 200 `{ "status": "ready" }` or 503 with `not_ready` or
 * `closing`, nothing more. Which check failed, the config hash and a refused reload's problems
 * are the operators' (GET /admin/v1/readyz): tenants reach this listener, and a reload's
 * problems describe the operator's config.
 */
export function readinessRoute (app: FastifyInstance, probe: ReadinessProbe): void {
  app.get('/readyz', async (_req, reply) => {
    const { status } = await probe.report()
    return await reply.code(status === 'ready' ? 200 : 503).header('cache-control', 'no-store').send({ status })
  })
}
