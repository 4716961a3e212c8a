// The listings' part of the plan: each family's `listings` entry becomes a GET route plan served beside
// the declared routes (withAddedRoutes), and each family gets the operations its routes serve
// (a model is listed in a family only when a request of that family can call it).
import type { GatewayConfig, ListingFormat } from '../../foundation/config/types.js'
import { compileOperation, type CompiledOperation } from '../../foundation/operations/compile.js'
import type { AddedRoute, CompiledRoutes, RoutePlan } from '../../foundation/routes/compile.js'

/** A listing is answered by the gateway: nothing is metered, held or billed (meter none). */
const unmetered = (name: string): CompiledOperation => compileOperation(name, {
  meter: { kind: 'none' },
  usage_chunk: false,
  video_parts: true,
  bounds: { max_tokens: [], count: [], count_is_images: false, job_units: [] }
})
const LISTING_OPERATION = unmetered('models.list')
const RETRIEVE_OPERATION = unmetered('models.get')

/** The route plans of every family's `listings`, in the order declared. */
export function compileListingRoutes (config: Pick<GatewayConfig, 'families'>): AddedRoute[] {
  return Object.entries(config.families).flatMap(([name, family]) => (family.listings ?? []).map((l): AddedRoute => {
    const one = l.path.includes('{id}')
    const plan: RoutePlan = Object.freeze({
      id: l.when_header === undefined ? `GET ${l.path}` : `GET ${l.path} (${l.when_header})`,
      method: 'GET',
      path: l.path,
      family: name,
      envelope: family.envelope,
      operation: one ? RETRIEVE_OPERATION.name : LISTING_OPERATION.name,
      op: one ? RETRIEVE_OPERATION : LISTING_OPERATION,
      body: Object.freeze(['none'] as const),
      itemLimits: Object.freeze({}),
      response: 'json',
      job: undefined,
      upstream: undefined,
      modelInPath: false,
      namesModel: false,
      bodyLimitBytes: undefined,
      deferredParams: Object.freeze([]),
      firstByteTimeoutMs: undefined,
      answerTimeoutMs: undefined,
      listing: l.format
    })
    return { plan, whenHeader: l.when_header }
  }))
}

/** What a listing route answers from: its format, and the operations its family's routes serve. */
export interface ListingRoute {
  readonly format: ListingFormat
  readonly family: string
  /** True for a path with `{id}`: one model. */
  readonly one: boolean
  /** The operations of the family's declared routes: a model serving none of them is not listed. */
  readonly operations: ReadonlySet<string>
}

/** Per listing route plan, what it answers from (the plugin's view of the routes slice). */
export function listingRoutes (routes: CompiledRoutes): ReadonlyMap<RoutePlan, ListingRoute> {
  const byFamily = new Map<string, Set<string>>()
  for (const plan of routes.plans) {
    if (plan.listing !== undefined) continue
    let ops = byFamily.get(plan.family)
    if (ops === undefined) byFamily.set(plan.family, ops = new Set())
    ops.add(plan.operation)
  }
  const out = new Map<RoutePlan, ListingRoute>()
  for (const plan of routes.plans) {
    if (plan.listing === undefined) continue
    out.set(plan, Object.freeze({ format: plan.listing, family: plan.family, one: plan.path.includes('{id}'), operations: byFamily.get(plan.family) ?? new Set<string>() }))
  }
  return out
}
