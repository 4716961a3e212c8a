// What the benchmark measures: each target is a server in its own child process in front of
// the mock upstream. The bare proxy is the baseline every other target is divided by.
import { CORES, forkChild, type BenchChild } from './child-process.js'

/** Environment for a target's child: at least BENCH_UPSTREAM_URL (the mock's URL). */
export type TargetEnv = Readonly<Record<string, string>>

export interface StartOptions {
  /** Extra node flags for the child (e.g. --cpu-prof). */
  execArgv?: readonly string[]
  /** A wrapper the child runs under (see ForkOptions.execPath). */
  execPath?: string
  startTimeoutMs?: number
}

export interface RunningTarget {
  url: string
  pid: number
  /** Every process whose CPU is the target's (several instances); absent: [pid]. */
  pids?: readonly number[]
  stop (): Promise<void>
  /** The child process, for memory samples. */
  child: BenchChild
}

export interface Target {
  readonly name: string
  readonly description: string
  /** Every 2xx answer must be charged in the ledger: the bench checks the child's report after each run. */
  readonly bills?: boolean
  start (env: TargetEnv, opts?: StartOptions): Promise<RunningTarget>
  /** Runs once after start, before any load: seeds what the target needs and names the request headers to send. */
  prepare? (running: RunningTarget): Promise<Prepared>
}

export interface Prepared {
  headers: Record<string, string>
  /** Keys to spread the load over (see LoadOptions.keys); absent: the workload's own. */
  keys?: readonly string[]
}

/** A target whose server is one of the modules in bench/children/. */
export function childTarget (name: string, description: string, entry: URL, extraEnv: TargetEnv = {}, bills = false): Target {
  return {
    name,
    description,
    bills,
    async start (env, opts = {}) {
      const child = await forkChild({
        name,
        entry,
        env: { ...extraEnv, ...env },
        execArgv: opts.execArgv ?? [],
        core: CORES.target,
        ...(opts.execPath !== undefined ? { execPath: opts.execPath } : {}),
        ...(opts.startTimeoutMs !== undefined ? { startTimeoutMs: opts.startTimeoutMs } : {})
      })
      return { url: child.url, pid: child.pid, stop: () => child.stop(), child }
    }
  }
}

export const BASELINE = 'bare'

export const bareProxyTarget = childTarget(
  BASELINE,
  'Fastify 5 + @fastify/http-proxy, undici connections 1024, pipelining 1',
  new URL('./children/bare-proxy.ts', import.meta.url)
)

/** PostgreSQL of the gateway-pg target: BENCH_DATABASE_URL, else the local test database. */
export const BENCH_PG_URL = process.env.BENCH_DATABASE_URL || process.env.TEST_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test'

/** Redis of the gateway-pg targets (limits, key cache invalidation): BENCH_REDIS_URL, else the local one. */
export const BENCH_REDIS_URL = process.env.BENCH_REDIS_URL || process.env.TEST_REDIS_URL || 'redis://127.0.0.1:6379'

/** Children that would otherwise inherit BENCH_DATABASE_URL from this process stay embedded. */
const EMBEDDED: TargetEnv = { BENCH_DATABASE_URL: '', BENCH_REDIS_URL: '' }

export const gatewayCoreTarget = childTarget(
  'gateway-core',
  'Fastify (buildServer options) + the pipeline host with the request, models and upstream plugins only: no auth, wallet, settlement or request log',
  new URL('./children/gateway-core.ts', import.meta.url),
  { ...EMBEDDED, BENCH_GATEWAY_STAGES: 'none' }
)

export const gatewayAuthTarget = childTarget(
  'gateway-auth',
  'gateway-core + the auth plugin, embedded SQLite store, seeded key',
  new URL('./children/gateway-core.ts', import.meta.url),
  { ...EMBEDDED, BENCH_GATEWAY_STAGES: 'auth' }
)

export const gatewayTarget = childTarget(
  'gateway',
  'GatewayHost as serve runs it (buildServer(gateway.yaml) behind the reload listener), logger off: auth + wallet hold, settle + request log; embedded SQLite',
  new URL('./children/gateway.ts', import.meta.url),
  EMBEDDED,
  true
)

export const minBilledTarget = childTarget(
  'min-billed',
  'the least a billed chat request does, on the gateway\'s store and nothing else: key HMAC + cache, hold, forward, usage, settle, request log row (a floor, not a mode of the gateway)',
  new URL('./children/min-billed.ts', import.meta.url),
  EMBEDDED
)

export const gatewayNoStoreTarget = childTarget(
  'gateway-nostore',
  'gateway with holds, settles and request log rows kept in memory: a bound on what billing costs without storage writes, not a mode of the gateway',
  new URL('./children/gateway.ts', import.meta.url),
  { ...EMBEDDED, BENCH_STORE_WRITES: 'off' },
  true
)

/** A URL without its credentials, for descriptions. */
export function redacted (url: string): string {
  return url.replace(/\/\/[^@/]*@/, '//')
}

export const gatewayPgTarget = childTarget(
  'gateway-pg',
  `buildServer as gateway, on PostgreSQL (${redacted(BENCH_PG_URL)}, fresh schema) and Redis (${redacted(BENCH_REDIS_URL)}: limits, key cache invalidation)`,
  new URL('./children/gateway.ts', import.meta.url),
  { BENCH_DATABASE_URL: BENCH_PG_URL, BENCH_REDIS_URL },
  true
)

/**
 * Portkey's gateway (bench/children/portkey.ts), when BENCH_PORTKEY_DIR names its install: the
 * provider and the mock's address go in Portkey's request headers, and the mock's control
 * header (x-mock-chunks) is forwarded by name.
 */
export const portkeyTarget: Target = (() => {
  const child = childTarget('portkey', 'Portkey AI gateway 1.15 (npm @portkey-ai/gateway, node build, @hono/node-server 1.13.5), provider openai with a custom host: the mock', new URL('./children/portkey.ts', import.meta.url))
  let upstream = ''
  return {
    ...child,
    async start (env, opts) {
      upstream = env.BENCH_UPSTREAM_URL ?? ''
      return await child.start(env, opts)
    },
    async prepare () {
      return {
        headers: {
          'x-portkey-provider': 'openai',
          'x-portkey-custom-host': `${upstream}/v1`,
          'x-portkey-forward-headers': 'x-mock-chunks'
        }
      }
    }
  }
})()

/** Every target a scenario or the memory test may name. */
export const TARGETS: ReadonlyMap<string, Target> = new Map(
  [bareProxyTarget, gatewayCoreTarget, gatewayAuthTarget, minBilledTarget, gatewayNoStoreTarget, gatewayTarget, gatewayPgTarget, portkeyTarget].map((t) => [t.name, t])
)

export function targetNamed (name: string): Target {
  const t = TARGETS.get(name)
  if (!t) throw new Error(`unknown bench target ${name}; known: ${[...TARGETS.keys()].join(', ')}`)
  return t
}

export async function startMock (): Promise<BenchChild> {
  return await forkChild({ name: 'mock-upstream', entry: new URL('./children/mock-upstream.ts', import.meta.url), env: {}, core: CORES.load })
}
