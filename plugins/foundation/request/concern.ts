import { concern } from '../pipeline/concern.js'
import type { CompiledRoutes } from '../routes/compile.js'
import { bodyOptionsOf, type BodyOptions } from './body.js'

/** The request: body parsers per route (the plan's `bodies`: their limits), the body read once. */
export const requestConcern = concern({
  name: 'request',
  plan: { slice: 'bodies', compile: (config, plan: { readonly routes: CompiledRoutes }): BodyOptions => bodyOptionsOf(config.server, plan.routes) },
  plugin: async (parts: { readonly plan: { readonly bodies: BodyOptions } }) => (await import('./index.js')).requestPlugin(parts.plan.bodies)
})
