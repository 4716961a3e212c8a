// The admin API, registered in one place: the admin routes (plugins/apps/admin) with the routes other
// folders add under the same token check, envelope and `Cache-Control: no-store` — the upstream
// circuits, the readiness report, config reload (serve's admin listener only) and the console's
// mail outbox. Both the public server (buildServer's `adminToken`) and serve's admin listener
// (buildAdminServer) register it through here, so the two carry the same API.
import type { FastifyInstance } from 'fastify'
import { configAdminRoutes, readinessAdminRoute, type ConfigControl, type ReadinessSource } from '../admin/config-routes.js'
import { ADMIN_PREFIX } from '../admin/constants.js'
import { adminRoutes, type AdminRoutesOptions } from '../admin/routes.js'
import { createUpstreamView, upstreamAdminRoutes, type UpstreamView } from '../../concerns/upstream/index.js'

export interface AdminApiOptions extends Omit<AdminRoutesOptions, 'extraRoutes'> {
  /** The gateway's upstream circuit state (GET /admin/v1/upstreams); absent: the route lists none. */
  upstreamView?: UpstreamView
  /** Config reload and the instances listing (serve's hot reload); absent: those routes do not exist. */
  control?: ConfigControl
  /** The public listener's readiness, reported whole at GET /admin/v1/readyz (absent: no such route). */
  readiness?: () => ReadinessSource
}

/** Registers the admin API under /admin/v1 on `app`. */
export async function registerAdminApi (app: FastifyInstance, opts: AdminApiOptions): Promise<void> {
  const { upstreamView, control, readiness, ...routes } = opts
  await app.register(adminRoutes, {
    prefix: ADMIN_PREFIX,
    ...routes,
    extraRoutes: async (app, ctx) => {
      upstreamAdminRoutes(upstreamView ?? createUpstreamView())(app)
      if (control) configAdminRoutes(app, control)
      if (readiness) readinessAdminRoute(app, readiness)
      ;(await import('../console/index.js')).consoleAdminRoutes(app, ctx)
    }
  })
}
