// The pipeline host alone over a plan, for the tests of its chains (pipeline-chains,
// pipeline-answerer): the request plugin, then the plugins under test; and a wait for a plugin's
// hook to have written its entry in the test's log (finish runs after the answer is sent).
import Fastify, { type FastifyInstance } from 'fastify'
import type { GatewayPlan } from '../../plugins/gateway/plan.js'
import { pipelineHost } from '../../plugins/pipeline/host.js'
import type { GatewayPlugin } from '../../plugins/pipeline/plugin.js'
import { requestPlugin } from '../../plugins/request/index.js'

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
