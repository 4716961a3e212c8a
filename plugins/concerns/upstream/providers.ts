import { Agent, Pool, type Dispatcher } from 'undici'
import { MemberHealth, type MemberHealthView } from './health.js'
import type { ProviderSettings, UpstreamPlan } from './plan.js'

/** A provider as the open upstreams hold it: its settings and its breaker. */
export interface CompiledProvider extends ProviderSettings {
  /** Circuit breaker state of this provider (mutable; shared by every pool it is a member of). */
  readonly health: MemberHealth
}

export interface CompiledPool {
  readonly name: string
  readonly members: readonly { provider: CompiledProvider, weight: number }[]
  readonly totalWeight: number
}

export interface Upstreams {
  readonly dispatcher: Dispatcher
  pool (name: string): CompiledPool
  /** A provider by name: a job is polled at the provider that runs it, not a pool's random pick. */
  provider (name: string): CompiledProvider
  /** Weighted pick; `random` in [0, 1) is injected so tests can choose. */
  pick (pool: CompiledPool, random: number): CompiledProvider
  /**
   * Weighted pick among the members not in `tried` (bit i: member i was tried) whose circuit
   * lets a request through; the index of the member, or -1 when none can be tried. Claims a
   * half-open circuit's probe. Allocates nothing.
   */
  choose (pool: CompiledPool, random: number, tried: number): number
  /** Milliseconds until the first open circuit of `pool` lets a probe through. */
  soonestProbeMs (pool: CompiledPool): number
  /** The circuit state of every provider, for the admin API. */
  status (): UpstreamStatus
  /** Starts the active health checks (when configured); stopped by close(). */
  startHealthChecks (onError?: (provider: string, err: unknown) => void): void
  close (): Promise<void>
}

export interface UpstreamStatus {
  providers: Array<{ name: string, origin: string, pools: string[] } & MemberHealthView>
}

/** Members past the 31st of a pool are never picked (the tried mask is a 31-bit number). */
const MAX_MASKED_MEMBERS = 31

/** True when `h` would let a request through now, without claiming anything. */
function open (h: MemberHealth, now: number): boolean {
  if (h.state === 'closed') return false
  if (h.state === 'open') return now < h.openUntil
  return h.probing
}

/**
 * Opens a plan's upstreams: one circuit per provider, one undici pool per origin. One per
 * gateway (config generation): the forward phase and the jobs concern share it.
 */
export function openUpstreams (plan: UpstreamPlan): Upstreams {
  const providers = new Map<string, CompiledProvider>()
  for (const [name, settings] of plan.providers) providers.set(name, Object.freeze({ ...settings, health: new MemberHealth(plan.breaker) }))
  const pools = new Map<string, CompiledPool>()
  for (const [name, pool] of plan.pools) {
    const compiled = pool.members.map((m) => ({ provider: providers.get(m.provider) as CompiledProvider, weight: m.weight }))
    pools.set(name, Object.freeze({ name, members: Object.freeze(compiled), totalWeight: compiled.reduce((s, m) => s + m.weight, 0) }))
  }

  // One undici Pool per origin, sized from config: the library default (reply-from's 128 per
  // origin) would silently queue every stream past the 128th behind the ones already open.
  const dispatcher = new Agent({
    factory: (origin: string | URL, opts: object) => {
      const key = typeof origin === 'string' ? new URL(origin).origin : origin.origin
      return new Pool(origin, {
        ...opts,
        connections: plan.origins.get(key)?.connections ?? 64,
        pipelining: 1,
        connect: { timeout: plan.origins.get(key)?.connectTimeoutMs ?? 10_000 }
      })
    }
  })
  const poolsOf = (provider: string): string[] =>
    [...pools.values()].filter((p) => p.members.some((m) => m.provider.name === provider)).map((p) => p.name)
  let checkTimer: NodeJS.Timeout | undefined

  return {
    dispatcher,
    pool (name) {
      const pool = pools.get(name)
      if (!pool) throw new Error(`unknown pool ${name}`)
      return pool
    },
    provider (name) {
      const provider = providers.get(name)
      if (!provider) throw new Error(`unknown provider ${name}`)
      return provider
    },
    pick (pool, random) {
      let target = random * pool.totalWeight
      for (const m of pool.members) {
        target -= m.weight
        if (target < 0) return m.provider
      }
      const last = pool.members[pool.members.length - 1]
      if (!last) throw new Error(`pool ${pool.name} is empty`)
      return last.provider
    },
    choose (pool, random, tried) {
      const members = pool.members
      // One member, never tried, circuit closed: the common case costs two reads.
      if (members.length === 1) {
        const only = members[0] as CompiledPool['members'][number]
        if ((tried & 1) !== 0 || only.weight <= 0) return -1
        if (only.provider.health.state === 'closed') return 0
        return only.provider.health.available(Date.now()) ? 0 : -1
      }
      const now = Date.now()
      let total = 0
      const n = Math.min(members.length, MAX_MASKED_MEMBERS)
      for (let i = 0; i < n; i++) {
        const m = members[i] as CompiledPool['members'][number]
        if ((tried & (1 << i)) === 0 && m.weight > 0 && !open(m.provider.health, now)) total += m.weight
      }
      if (total <= 0) return -1
      let target = random * total
      let chosen = -1
      for (let i = 0; i < n; i++) {
        const m = members[i] as CompiledPool['members'][number]
        if ((tried & (1 << i)) !== 0 || m.weight <= 0 || open(m.provider.health, now)) continue
        chosen = i
        target -= m.weight
        if (target < 0) break
      }
      if (chosen === -1) return -1
      return (members[chosen] as CompiledPool['members'][number]).provider.health.available(now) ? chosen : -1
    },
    soonestProbeMs (pool) {
      const now = Date.now()
      let soonest = Infinity
      for (const m of pool.members) soonest = Math.min(soonest, m.provider.health.waitMs(now))
      return soonest === Infinity ? 0 : soonest
    },
    status () {
      const now = Date.now()
      return {
        providers: [...providers.values()].map((p) => ({ name: p.name, origin: p.origin, pools: poolsOf(p.name), ...p.health.view(now) }))
      }
    },
    startHealthChecks (onError) {
      const interval = plan.healthCheckIntervalMs
      const checked = [...providers.values()].filter((p) => p.healthCheckPath !== null)
      if (interval <= 0 || checked.length === 0 || checkTimer) return
      let running = false
      const round = async (): Promise<void> => {
        if (running) return
        running = true
        try {
          await Promise.all(checked.map(async (p) => {
            const at = Date.now()
            try {
              const res = await dispatcher.request({
                origin: p.origin,
                path: p.healthCheckPath as string,
                method: 'GET',
                headers: p.headers,
                headersTimeout: p.timeoutMs,
                bodyTimeout: p.bodyTimeoutMs
              })
              await res.body.dump()
              const ok = res.statusCode < 500
              p.health.lastCheckOk = ok
              p.health.lastCheckAt = at
              if (ok) p.health.succeeded()
              else p.health.failed(at, `health check: status ${res.statusCode}`)
            } catch (err) {
              p.health.lastCheckOk = false
              p.health.lastCheckAt = at
              p.health.failed(at, `health check: ${(err as { code?: string }).code ?? 'unreachable'}`)
              onError?.(p.name, err)
            }
          }))
        } finally {
          running = false
        }
      }
      checkTimer = setInterval(() => { round().catch(() => {}) }, interval)
      checkTimer.unref()
    },
    close: () => {
      if (checkTimer) clearInterval(checkTimer)
      checkTimer = undefined
      return dispatcher.close()
    }
  }
}
