// The upstream slice of the plan: providers, pools and connection budgets, compiled from the
// config before any connection is opened (openUpstreams, providers.ts, opens them). Kept apart
// from the pools' code so that loading a config never loads the HTTP client.
import type { GatewayConfig } from '../../foundation/config/types.js'
import { compileAllowLists, type ProviderAllowLists } from './allow-lists.js'
import type { BreakerSettings } from './health.js'

/** A provider's settings as the plan holds them (no runtime state: openUpstreams adds its health). */
export interface ProviderSettings {
  readonly name: string
  readonly origin: string
  /** Path prefix of base_url (usually empty). */
  readonly basePath: string
  readonly headers: Readonly<Record<string, string>>
  /** First byte of a streamed answer, or of a call that generates nothing (a poll, a download). */
  readonly timeoutMs: number
  /** First byte of a non-streamed answer: the provider sends it once the whole answer is generated. */
  readonly answerTimeoutMs: number
  readonly bodyTimeoutMs: number
  /** A streaming client that left: read on for usage (server.drain_timeout_ms) instead of cancelling. */
  readonly drainOnDisconnect: boolean
  /** Active health check path (base path included), or null for none. */
  readonly healthCheckPath: string | null
  /** What may cross besides the body, both ways (compiled once). */
  readonly allow: ProviderAllowLists
}

/** The upstream part of a plan: what the pools, providers and their connections are, before any is opened. */
export interface UpstreamPlan {
  readonly providers: ReadonlyMap<string, ProviderSettings>
  readonly pools: ReadonlyMap<string, { readonly members: ReadonlyArray<{ readonly provider: string, readonly weight: number }> }>
  /** Connections per origin (providers on one origin add up) and the shortest connect timeout among them. */
  readonly origins: ReadonlyMap<string, { readonly connections: number, readonly connectTimeoutMs: number }>
  readonly breaker: BreakerSettings
  readonly healthCheckIntervalMs: number
  /** Tries per pool before the next fallback model, and the upstream statuses worth another try. */
  readonly retry: { readonly maxTries: number, readonly retryStatuses: ReadonlySet<number> }
  /** Client headers never sent upstream (`auth.strip_headers`, lower case). */
  readonly stripHeaders: ReadonlySet<string>
}

/** Pure: the providers, pools and connection budgets of a config; opened by openUpstreams. */
export function compileUpstreamPlan (config: GatewayConfig): UpstreamPlan {
  const providers = new Map<string, ProviderSettings>()
  const origins = new Map<string, { connections: number, connectTimeoutMs: number }>()
  const up = config.upstream ?? { max_tries: 2, retry_statuses: [], breaker_failures: 3, breaker_cooldown_ms: 10_000, health_check_interval_ms: 0 }
  for (const [name, p] of Object.entries(config.providers)) {
    const url = new URL(p.base_url)
    providers.set(name, Object.freeze({
      name,
      origin: url.origin,
      basePath: url.pathname.replace(/\/+$/, ''),
      headers: Object.freeze(Object.fromEntries(Object.entries(p.headers ?? {}).map(([k, v]) => [k.toLowerCase(), v]))),
      timeoutMs: p.timeout_ms,
      answerTimeoutMs: p.answer_timeout_ms,
      bodyTimeoutMs: p.body_timeout_ms,
      drainOnDisconnect: p.drain_on_disconnect === true,
      healthCheckPath: p.health_check_path === undefined ? null : url.pathname.replace(/\/+$/, '') + p.health_check_path,
      allow: compileAllowLists(p)
    }))
    const connect = p.connect_timeout_ms ?? 10_000
    const seen = origins.get(url.origin)
    origins.set(url.origin, Object.freeze({
      connections: (seen?.connections ?? 0) + p.connections,
      connectTimeoutMs: Math.min(seen?.connectTimeoutMs ?? connect, connect)
    }))
  }
  const pools = new Map<string, { members: ReadonlyArray<{ provider: string, weight: number }> }>()
  for (const [name, members] of Object.entries(config.pools)) {
    for (const m of members) if (!providers.has(m.provider)) throw new Error(`pool ${name} names unknown provider ${m.provider}`)
    pools.set(name, Object.freeze({ members: Object.freeze(members.map((m) => Object.freeze({ provider: m.provider, weight: m.weight ?? 1 }))) }))
  }
  return Object.freeze({
    providers,
    pools,
    origins,
    breaker: Object.freeze({ failures: up.breaker_failures, cooldownMs: up.breaker_cooldown_ms }),
    healthCheckIntervalMs: up.health_check_interval_ms,
    retry: Object.freeze({ maxTries: up.max_tries, retryStatuses: new Set(up.retry_statuses) }),
    stripHeaders: new Set(config.auth.strip_headers.map((h) => h.toLowerCase()))
  })
}
