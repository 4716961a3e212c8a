// The plan: one pure compile of a loaded gateway.yaml into the immutable runtime form every
// concern reads (Envoy AI Gateway's controller → data plane; STYLE.md "Compile once"). Made
// once per boot and once per hot reload (plugins/apps/server/reload.ts swaps a generation whole,
// and its plan with it); nothing at request time reads the YAML. Each concern keeps its own
// compile step beside its plugin; PLAN_STEPS below, the composition root's list, runs them in
// order, each reading the slices of the steps before it.
import { channel } from 'node:diagnostics_channel'
import { compileKeyHeaders, type KeyHeaderRules } from '../../concerns/auth/key-headers.js'
import { compileAdmission, type AdmissionChecks } from '../../concerns/admission/index.js'
import { configHash } from '../../foundation/config/snapshot.js'
import type { GatewayConfig } from '../../foundation/config/types.js'
import { compileCatalogue, type Catalogue } from '../../foundation/errors/index.js'
import { compileJobRoutes, type JobRoutes } from '../../concerns/jobs/job-routes.js'
import { compilePolicies, type Policies } from '../../concerns/limits/policy.js'
import { compileModelTable, type ModelTable } from '../../concerns/models/catalogue.js'
import { compileOperations, type CompiledOperations } from '../../foundation/operations/compile.js'
import { compileListingRoutes } from '../../concerns/listings/compile.js'
import { compileRoutes, withAddedRoutes, type CompiledRoutes } from '../../foundation/routes/compile.js'
import { bodyOptionsOf, type BodyOptions } from '../../foundation/request/body.js'
import { compileUpstreamPlan, type UpstreamPlan } from '../../concerns/upstream/providers.js'

/** The compiled slices, one per concern that compiles something; each step's output. */
export interface PlanSlices {
  /** The operations table (built-ins and the config's): meter, job role, bounds, features. */
  readonly operations: CompiledOperations
  /** The error catalogue, ready to render in each family's envelope. */
  readonly catalogue: Catalogue
  /** One plan per declared route and per listing, the Fastify routes they are served at, the envelope of a path. */
  readonly routes: CompiledRoutes
  /** The body parsers' limits per Fastify route (request concern). */
  readonly bodies: BodyOptions
  /** Every completely priced model with its exact prices, operations and body edits. */
  readonly models: ModelTable
  /** Providers, pools and connection budgets, before any connection is opened. */
  readonly upstream: UpstreamPlan
  /** Where each job kind is polled and downloaded upstream. */
  readonly jobs: JobRoutes
  /** The rate-limit tiers and key policies. */
  readonly limits: Policies
  /** The headers an API key may come in. */
  readonly keyHeaders: KeyHeaderRules
  /** What each route and model declares that a request can be refused for (admission concern). */
  readonly admission: AdmissionChecks
}

/** One config compiled: immutable (frozen), named by the config's hash. */
export interface GatewayPlan extends PlanSlices {
  /** sha256 of the expanded, defaults-filled config (configHash): two compiles of one file agree. */
  readonly hash: string
  /** The validated, deep-frozen config the plan was compiled from (settings read as they are). */
  readonly config: GatewayConfig
}

/** A slice reader for a step: the slice of an earlier step (a step listed too early throws). */
export type EarlierSlice = <K extends keyof PlanSlices>(slice: K) => PlanSlices[K]

type PlanStep = { [K in keyof PlanSlices]: { readonly slice: K, compile (config: GatewayConfig, earlier: EarlierSlice): PlanSlices[K] } }[keyof PlanSlices]

/** The compile steps in order: each concern's pure compile, beside its plugin. */
export const PLAN_STEPS: readonly PlanStep[] = Object.freeze([
  { slice: 'operations', compile: (config) => compileOperations(config) },
  { slice: 'catalogue', compile: (config) => compileCatalogue(config.errors, config.server) },
  // The declared routes, and the listings served beside them (answered by the gateway itself).
  { slice: 'routes', compile: (config, earlier) => withAddedRoutes(compileRoutes(config, earlier('operations')), compileListingRoutes(config)) },
  { slice: 'bodies', compile: (config, earlier) => bodyOptionsOf(config.server, earlier('routes')) },
  { slice: 'models', compile: (config) => compileModelTable(config) },
  { slice: 'upstream', compile: (config) => compileUpstreamPlan(config) },
  { slice: 'jobs', compile: (config, earlier) => compileJobRoutes(config, earlier('operations')) },
  { slice: 'limits', compile: (config) => compilePolicies(config.limits) },
  { slice: 'keyHeaders', compile: (config) => compileKeyHeaders(config.auth.headers) },
  { slice: 'admission', compile: (config) => compileAdmission(config) }
] satisfies PlanStep[])

/** The diagnostics channel told of every compile (one message per plan: `{ hash, plan }`). */
export const PLAN_COMPILED_CHANNEL = 'model-gateway:plan-compiled'
const compiled = channel(PLAN_COMPILED_CHANNEL)

export interface PlanCompiledMessage {
  readonly hash: string
  readonly plan: GatewayPlan
}

/**
 * Freezes the plan's plain objects and arrays, deeply; what a slice keeps behind its own
 * read-only interface (a Map, a RegExp, a class instance) is left as the slice built it.
 */
function freezePlain<T> (value: T): T {
  if (value === null || typeof value !== 'object' || Object.isFrozen(value)) return value
  const proto: unknown = Object.getPrototypeOf(value)
  if (!Array.isArray(value) && proto !== Object.prototype && proto !== null) return value
  Object.freeze(value)
  for (const child of Object.values(value)) freezePlain(child)
  return value
}

/**
 * Pure: a validated config (loadConfig) in, its frozen plan out. `hash` is the config's hash when
 * the caller has it (loadConfig computed it); it is computed otherwise.
 */
export function compilePlan (config: GatewayConfig, hash: string = configHash(config)): GatewayPlan {
  const slices: Partial<Record<keyof PlanSlices, unknown>> = {}
  const earlier: EarlierSlice = (slice) => {
    const value = slices[slice]
    if (value === undefined) throw new Error(`plan: a step reads the ${slice} slice before it is compiled (PLAN_STEPS order)`)
    return value as PlanSlices[typeof slice]
  }
  for (const step of PLAN_STEPS) slices[step.slice] = freezePlain(step.compile(config, earlier))
  // The config is loadConfig's, deep-frozen already (one built by hand is left as its owner made it).
  const plan = Object.freeze({ hash, config, ...slices } as GatewayPlan)
  if (compiled.hasSubscribers) compiled.publish({ hash, plan } satisfies PlanCompiledMessage)
  return plan
}
