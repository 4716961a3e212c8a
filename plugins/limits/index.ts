import type { ServerConfig } from '../config/types.js'
import type { GatewayPlugin } from '../pipeline/plugin.js'
import { capConnectionsPerAddress } from './connection-cap.js'

export { capConnectionsPerAddress, ConnectionCounts } from './connection-cap.js'

/**
 * setup: a cap on the connections one client address holds open at once
 * (`server.max_connections_per_address`); a request over it is refused before anything else
 * runs. Rate limits and stream leases (the limits issue) belong here too.
 */
export function limitsPlugin (server: ServerConfig): GatewayPlugin {
  return {
    name: 'limits',
    setup (app) {
      capConnectionsPerAddress(app, server.max_connections_per_address)
    }
  }
}
