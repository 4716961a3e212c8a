import type { GatewayConfig } from '../../plugins/config/types.js'

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
  const tiers = { ...config.limits.tiers, [BENCH_TIER]: { rank: top, requests_per_minute: 100_000_000, concurrent_streams: 1_000_000 } }
  return { ...config, limits: { ...config.limits, tiers } }
}
