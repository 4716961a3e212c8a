import type { GatewayConfig } from '../../plugins/foundation/config/types.js'

/**
 * The bench drives up to 2000 streams at once from one address (the memory test), which the
 * per-address connection cap (a security bound, exercised by test/hostile/) would refuse past
 * its default; the bench measures throughput and memory, so the cap is lifted here, nothing else.
 */
export function withoutAddressCap (config: GatewayConfig): GatewayConfig {
  return { ...config, server: { ...config.server, max_connections_per_address: 0 } }
}

/** The tier of the bench account: the limits run on every request (their cost is measured) but never refuse. */
export const BENCH_TIER = 'bench'

/**
 * Adds the bench tier: requests per minute and streams far above what the bench sends (the
 * default tiers, 60 to 6000 requests a minute, would throttle it); ranked above every tier.
 */
export function withBenchTier (config: GatewayConfig): GatewayConfig {
  const top = Math.max(...Object.values(config.limits.tiers).map((t) => t.rank)) + 1
  const tiers = { ...config.limits.tiers, [BENCH_TIER]: { rank: top, requests_per_minute: 100_000_000, concurrent_streams: 1_000_000, overdraft: '0' } }
  return { ...config, limits: { ...config.limits, tiers } }
}

/**
 * With BENCH_STALLED_URL (bench/stalled.ts): the openai pool gets a second member,
 * `openai-stalled`, a copy of openai at that URL (a server that accepts connections and never
 * answers) whose first-byte timeout is BENCH_STALLED_TIMEOUT_MS; both members weigh the same.
 * Without it the config is unchanged.
 */
export function withStalledMember (config: GatewayConfig, env: NodeJS.ProcessEnv = process.env): GatewayConfig {
  const url = env.BENCH_STALLED_URL
  if (url === undefined || url === '') return config
  const openai = config.providers.openai
  const pool = config.pools.openai
  if (openai === undefined || pool === undefined) throw new Error('withStalledMember: the config has no openai provider and pool')
  const timeout = Number(env.BENCH_STALLED_TIMEOUT_MS ?? 1000)
  return {
    ...config,
    providers: { ...config.providers, 'openai-stalled': { ...openai, base_url: url, timeout_ms: timeout } },
    pools: { ...config.pools, openai: [...pool, { provider: 'openai-stalled', weight: pool[0]?.weight ?? 1 }] }
  }
}
