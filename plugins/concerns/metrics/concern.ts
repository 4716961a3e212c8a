import { concern } from '../../foundation/pipeline/concern.js'
import type { GatewayMetrics } from './index.js'

/** Prometheus metrics: listed only when the gateway is given a registry (off costs nothing per request). */
export const metricsConcern = concern({
  name: 'metrics',
  plugin: async (parts: { readonly metrics?: GatewayMetrics | undefined }) =>
    parts.metrics === undefined ? undefined : (await import('./index.js')).metricsPlugin(parts.metrics)
})
