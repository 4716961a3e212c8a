// A concern as the composition root lists it: its checks of gateway.yaml, its slice of the plan,
// the routes it adds and its plugin, in one declaration beside its code (Kong's `schema.lua` and
// `handler.lua` side by side). The root's one list (CONCERNS, plugins/apps/gateway/concerns.ts)
// drives the config checks, the plan's compile and the hooks alike: a new concern is its folder
// and one line there.
//
// A declaration imports what its checks and its compile need; its plugin's module is imported
// when a gateway is built (`plugin` is async), so loading a config (the CLI, `check`) does not
// load the pools, the HTTP client or the hooks.
import type { ConfigCheck } from '../config/cross-check.js'
import type { GatewayConfig } from '../config/types.js'
import type { AddedRoute } from '../routes/compile.js'
import type { GatewayPlugin } from './plugin.js'

/**
 * A concern's slice of the plan: its name in the plan and its pure compile. `plan` holds the
 * other slices it reads, typed by the concern as what it needs (`{ readonly routes: CompiledRoutes }`):
 * each is compiled on its first read, whatever the list order, and the composition root's type
 * check fails when a concern reads a slice nobody compiles.
 */
export interface PlanStep<K extends string = string, S = unknown, Reads = never> {
  readonly slice: K
  readonly compile: (config: GatewayConfig, plan: Reads) => S
}

export interface Concern {
  /** Unique in the list. */
  readonly name: string
  /** Its checks of its own config sections, run after the config's own schema and cross-checks. */
  readonly checks?: readonly ConfigCheck[]
  /** Its warnings (`check` prints them; loading succeeds). */
  readonly warnings?: readonly ConfigCheck[]
  /** Its slice of the plan. */
  readonly plan?: PlanStep
  /** Routes it answers beside the declared ones (added to the plan's routes). */
  readonly routes?: (config: GatewayConfig) => readonly AddedRoute[]
  /**
   * Its plugin, from the parts of the gateway it asks for (typed by the concern as what it
   * reads: `{ readonly plan: { readonly admission: AdmissionChecks } }`); undefined when the
   * config leaves it out (it then costs nothing per request). The root's type check fails when
   * a concern asks for a part the gateway does not have.
   */
  readonly plugin?: (parts: never) => Promise<GatewayPlugin | undefined>
}

/** A concern's declaration, frozen, with its slice name and the types it reads kept exact. */
export function concern<const C extends Concern> (declaration: C): C {
  return Object.freeze(declaration)
}
