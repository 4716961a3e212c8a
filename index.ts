// The package entry (`import { modelGateway, loadConfig } from 'model-gateway'`): the whole
// gateway as a Fastify plugin, and the config loader it takes its config from.
//
//   await app.register(modelGateway, { config: await loadConfig('gateway.yaml') })
//
// mounts every phase on the same stores and environment as `npm start` (DATABASE_URL,
// REDIS_URL, GATEWAY_DATA_DIR, GATEWAY_SECRET).
import type { Env } from './plugins/foundation/config/index.js'
import { loadConfig as loadConfigFile } from './plugins/apps/gateway/config.js'
import type { GatewayConfig } from './plugins/foundation/config/types.js'

export { modelGateway, gatewayFrameworkErrors, gatewayPlugins, outcomeObserver, newRequestId, compilePlan, PLAN_COMPILED_CHANNEL } from './plugins/apps/gateway/index.js'
export type { GatewayOptions, GatewayPlan, GatewayPlugin, GatewayServices, ForwardControl, Outcome, PhaseName, RequestContext, RequestState } from './plugins/apps/gateway/index.js'
export { buildServer, type ServerOptions } from './plugins/apps/server/server.js'
export { ConfigError, formatProblem, type ConfigProblem } from './plugins/foundation/config/index.js'
export type { GatewayConfig } from './plugins/foundation/config/types.js'

/**
 * Reads, expands (`${ENV}`), validates and freezes a gateway.yaml; rejects with a ConfigError
 * listing every problem with its file, line and column.
 */
export async function loadConfig (file: string, env: Env = process.env): Promise<GatewayConfig> {
  return loadConfigFile(file, env).config
}
