import { Agent, Pool, type Dispatcher } from 'undici'
import type { GatewayConfig } from '../config/types.js'
import { compileAllowLists, type ProviderAllowLists } from './allow-lists.js'

export interface CompiledProvider {
  readonly name: string
  readonly origin: string
  /** Path prefix of base_url (usually empty). */
  readonly basePath: string
  readonly headers: Readonly<Record<string, string>>
  readonly timeoutMs: number
  readonly bodyTimeoutMs: number
  /** What may cross besides the body, both ways (compiled once). */
  readonly allow: ProviderAllowLists
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
  close (): Promise<void>
}

export function compileUpstreams (config: GatewayConfig): Upstreams {
  const providers = new Map<string, CompiledProvider>()
  // Several providers may share an origin (one mock upstream in tests): their pools add up.
  const connectionsByOrigin = new Map<string, number>()
  for (const [name, p] of Object.entries(config.providers)) {
    const url = new URL(p.base_url)
    providers.set(name, Object.freeze({
      name,
      origin: url.origin,
      basePath: url.pathname.replace(/\/+$/, ''),
      headers: Object.freeze(Object.fromEntries(Object.entries(p.headers ?? {}).map(([k, v]) => [k.toLowerCase(), v]))),
      timeoutMs: p.timeout_ms,
      bodyTimeoutMs: p.body_timeout_ms,
      allow: compileAllowLists(p)
    }))
    connectionsByOrigin.set(url.origin, (connectionsByOrigin.get(url.origin) ?? 0) + p.connections)
  }
  const pools = new Map<string, CompiledPool>()
  for (const [name, members] of Object.entries(config.pools)) {
    const compiled = members.map((m) => {
      const provider = providers.get(m.provider)
      if (!provider) throw new Error(`pool ${name} names unknown provider ${m.provider}`)
      return { provider, weight: m.weight ?? 1 }
    })
    pools.set(name, Object.freeze({ name, members: Object.freeze(compiled), totalWeight: compiled.reduce((s, m) => s + m.weight, 0) }))
  }

  // One undici Pool per origin, sized from config: the library default (reply-from's 128 per
  // origin) would silently queue every stream past the 128th behind the ones already open.
  const dispatcher = new Agent({
    factory: (origin: string | URL, opts: object) => {
      const key = typeof origin === 'string' ? new URL(origin).origin : origin.origin
      return new Pool(origin, { ...opts, connections: connectionsByOrigin.get(key) ?? 64, pipelining: 1 })
    }
  })

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
    close: () => dispatcher.close()
  }
}
