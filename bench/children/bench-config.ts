import type { GatewayConfig } from '../../plugins/config/types.js'

/**
 * The bench drives up to 2000 streams at once from one address (the memory test), which the
 * per-address connection cap (a security bound, exercised by test/hostile/) would refuse past
 * its default; the bench measures throughput and memory, so the cap is lifted here, nothing else.
 */
export function withoutAddressCap (config: GatewayConfig): GatewayConfig {
  return { ...config, server: { ...config.server, max_connections_per_address: 0 } }
}
