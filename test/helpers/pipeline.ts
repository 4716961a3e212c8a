// The pipeline host alone over a plan, for the tests of its chains (pipeline-chains,
// pipeline-answerer): the request plugin, then the plugins under test; and a wait for a plugin's
// hook to have written its entry in the test's log (finish runs after the answer is sent); the
// composition root's plugins, and the names on a route's chain.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Fastify, { type FastifyInstance } from 'fastify'
import type { Test } from 'tap'
import { gatewayPlugins, openServices } from '../../plugins/apps/gateway/index.js'
import type { GatewayPlan } from '../../plugins/apps/gateway/plan.js'
import type { GatewayMetrics } from '../../plugins/concerns/metrics/index.js'
import { modelCatalogue } from '../../plugins/concerns/models/index.js'
import { pipelineHost } from '../../plugins/foundation/pipeline/host.js'
import type { GatewayPlugin, PHASES, PluginHooks } from '../../plugins/foundation/pipeline/plugin.js'
import { requestPlugin } from '../../plugins/foundation/request/index.js'
import type { RoutePlan } from '../../plugins/foundation/routes/compile.js'
import { openUpstreams } from '../../plugins/concerns/upstream/index.js'
import { TEST_SECRET } from './store.js'

export async function hostOf (plan: GatewayPlan, plugins: GatewayPlugin[]): Promise<FastifyInstance> {
  const app = Fastify({ logger: false })
  await app.register(pipelineHost, { plan, plugins: [requestPlugin(plan.bodies), ...plugins] })
  await app.ready()
  return app
}

/** Waits (up to a second) until `log` holds `entry`. */
export async function logged (log: readonly string[], entry: string): Promise<void> {
  for (let i = 0; i < 200 && !log.includes(entry); i++) await new Promise((resolve) => setTimeout(resolve, 5))
}

/**
 * The composition root's plugins over `plan` on an embedded store in a temporary directory, its
 * own upstreams (nothing is called), all closed by the test's teardown.
 */
export async function rootPlugins (t: Test, plan: GatewayPlan, extra: { metrics?: GatewayMetrics } = {}): Promise<GatewayPlugin[]> {
  const dir = mkdtempSync(join(tmpdir(), 'gw-root-'))
  const services = await openServices({ dataDir: dir, secret: TEST_SECRET, defaultTier: plan.config.limits.default_tier })
  const upstreams = openUpstreams(plan.upstream)
  t.teardown(async () => {
    await upstreams.close()
    await services.close()
    rmSync(dir, { recursive: true, force: true })
  })
  const plugins = await gatewayPlugins({ plan, services, models: modelCatalogue(plan.models), upstreams, ...extra, log: Fastify({ logger: false }).log })
  t.teardown(async () => { for (const p of [...plugins].reverse()) await p.close?.() })
  return plugins
}

/** The plugin names whose `phase` hook a route's chain runs (as the host builds it: forRoute, else the plugin's own hooks). */
export function chainNames (plugins: readonly GatewayPlugin[], route: RoutePlan, phase: typeof PHASES[number]): string[] {
  return plugins.filter((p) => {
    const hooks: PluginHooks = p.forRoute === undefined ? p : p.forRoute(route)
    return typeof hooks[phase] === 'function'
  }).map((p) => p.name)
}
