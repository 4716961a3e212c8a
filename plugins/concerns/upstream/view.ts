// The circuit state of this instance's upstreams, readable by the admin API
// (GET /admin/v1/upstreams). The server makes one view, hands it to the gateway (whose upstream
// plugin fills `read`) and to the admin routes; nothing is read on a request's path.
import type { FastifyInstance } from 'fastify'
import type { UpstreamStatus } from './providers.js'

export type { UpstreamStatus } from './providers.js'

export interface UpstreamView {
  /** Set by the upstream plugin when the gateway starts; null before (or without a gateway). */
  read: (() => UpstreamStatus) | null
}

export function createUpstreamView (): UpstreamView {
  return { read: null }
}

/** The admin route (an `extraRoutes` of the admin API): every provider's circuit, as this instance sees it. */
export function upstreamAdminRoutes (view: UpstreamView): (app: FastifyInstance) => void {
  return (app) => {
    app.get('/upstreams', async () => view.read?.() ?? { providers: [] })
  }
}
