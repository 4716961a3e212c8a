// The plan: one pure compile of a loaded gateway.yaml into the immutable runtime form every
// concern reads (Envoy AI Gateway's controller → data plane; STYLE.md "Compile once"). Made
// once per boot and once per hot reload (plugins/apps/server/reload.ts swaps a generation whole,
// and its plan with it); nothing at request time reads the YAML. Each concern keeps its own
// compile step in its declaration (CONCERNS, concerns.ts); compilePlan runs the host's steps and
// theirs, each slice compiled on its first read.
import { channel } from 'node:diagnostics_channel'
import { configHash } from '../../foundation/config/snapshot.js'
import type { GatewayConfig } from '../../foundation/config/types.js'
import { compileCatalogue } from '../../foundation/errors/index.js'
import type { CompiledOperations } from '../../foundation/operations/index.js'
import type { Concern, PlanStep } from '../../foundation/pipeline/concern.js'
import { compileRoutes, withAddedRoutes } from '../../foundation/routes/compile.js'
import { CONCERNS } from './concerns.js'

const listed: readonly Concern[] = CONCERNS

/**
 * The host's own slices: the error catalogue it renders refusals with, and the routes it
 * registers (the declared ones, and those the concerns add, such as the listings).
 */
const HOST_STEPS = Object.freeze([
  { slice: 'catalogue', compile: (config: GatewayConfig) => compileCatalogue(config.errors, config.server) },
  {
    slice: 'routes',
    compile: (config: GatewayConfig, plan: { readonly operations: CompiledOperations }) =>
      withAddedRoutes(compileRoutes(config, plan.operations), listed.flatMap((c) => c.routes?.(config) ?? []))
  }
] as const)

type StepOf<C> = C extends { readonly plan: infer S extends PlanStep } ? S : never
type Step = StepOf<typeof CONCERNS[number]> | typeof HOST_STEPS[number]

/**
 * The compiled slices, one per step: the host's and each concern's (its declaration's `plan`),
 * named and typed as the step declares them.
 */
export type PlanSlices = { readonly [S in Step as S['slice']]: ReturnType<S['compile']> }

/** One config compiled: immutable (frozen), named by the config's hash. */
export type GatewayPlan = PlanSlices & {
  /** sha256 of the expanded, defaults-filled config (configHash): two compiles of one file agree. */
  readonly hash: string
  /** The validated, deep-frozen config the plan was compiled from (settings read as they are). */
  readonly config: GatewayConfig
}

/**
 * The compile steps, the host's first, then the concerns' in the list's order. Typed as reading
 * the whole plan: a step that reads a slice no step compiles fails the type check here.
 */
export const PLAN_STEPS: ReadonlyArray<{ readonly slice: string, readonly compile: (config: GatewayConfig, plan: GatewayPlan) => unknown }> = Object.freeze([
  ...HOST_STEPS,
  ...CONCERNS.flatMap((c): ReadonlyArray<StepOf<typeof c>> => 'plan' in c ? [c.plan] : [])
])

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
 * Runs `steps` over `config`: each slice compiled once, on its first read (a step reads any
 * other slice through its `plan` argument, whatever the order, and the config and hash), then
 * frozen. Throws on two steps of one slice, a slice named like the plan's own fields, and a
 * step that reads itself through others (the chain named).
 */
export function compileSlices (config: GatewayConfig, hash: string, steps: typeof PLAN_STEPS): Record<string, unknown> {
  const bySlice = new Map<string, (typeof PLAN_STEPS)[number]>()
  for (const step of steps) {
    if (step.slice === 'hash' || step.slice === 'config') throw new Error(`plan: a step may not compile a slice named ${step.slice} (the plan's own field)`)
    if (bySlice.has(step.slice)) throw new Error(`plan: two steps compile the ${step.slice} slice`)
    bySlice.set(step.slice, step)
  }
  const slices = new Map<string, unknown>()
  const compiling: string[] = []
  const reader = { hash, config }
  const sliceOf = (name: string): unknown => {
    if (slices.has(name)) return slices.get(name)
    if (compiling.includes(name)) throw new Error(`plan: the ${name} slice reads itself (${[...compiling, name].join(' → ')})`)
    compiling.push(name)
    const value = freezePlain((bySlice.get(name) as (typeof PLAN_STEPS)[number]).compile(config, reader as GatewayPlan))
    compiling.pop()
    slices.set(name, value)
    return value
  }
  for (const name of bySlice.keys()) Object.defineProperty(reader, name, { get: () => sliceOf(name), enumerable: true })
  for (const name of bySlice.keys()) sliceOf(name)
  return Object.fromEntries(slices)
}

/**
 * Pure: a validated config (loadConfig) in, its frozen plan out. `hash` is the config's hash when
 * the caller has it (loadConfig computed it); it is computed otherwise.
 */
export function compilePlan (config: GatewayConfig, hash: string = configHash(config)): GatewayPlan {
  const slices = compileSlices(config, hash, PLAN_STEPS)
  // The config is loadConfig's, deep-frozen already (one built by hand is left as its owner made it).
  const plan = Object.freeze({ hash, config, ...slices }) as GatewayPlan
  if (compiled.hasSubscribers) compiled.publish({ hash, plan } satisfies PlanCompiledMessage)
  return plan
}
