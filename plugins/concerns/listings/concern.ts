import { concern } from '../../foundation/pipeline/concern.js'
import type { CompiledRoutes } from '../../foundation/routes/compile.js'
import type { ModelCatalogue } from '../models/index.js'
import { checkListings } from './check.js'
import { compileListingRoutes } from './compile.js'

/** The model listings a family declares: answered by the gateway itself, in place of the upstream (nothing held, nothing sent). */
export const listingsConcern = concern({
  name: 'listings',
  checks: [checkListings],
  routes: (config) => compileListingRoutes(config),
  plugin: async (parts: { readonly plan: { readonly routes: CompiledRoutes }, readonly models: ModelCatalogue }) =>
    (await import('./index.js')).listingsPlugin({ routes: parts.plan.routes, models: parts.models })
})
