import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { BillingStatus } from '../errors/index.js'
import type { RoutePlan } from '../routes/compile.js'
import type { Outcome, RequestContext } from './context.js'
import type { CompiledModel } from '../shapes/index.js'

/** The phases of a request, in the order they run. */
export const PHASES = ['admit', 'resolve', 'charge', 'forward', 'settle', 'finish'] as const
export type PhaseName = typeof PHASES[number]

type MaybePromise<T> = T | Promise<T>

/** What the host offers the forward phase, which alone knows when an answer starts and ends. */
export interface ForwardControl {
  /**
   * Makes `model` the request's target (a fallback) and runs the per-model phases (resolve,
   * charge) again for it. False when one of them refused: that model cannot serve the request,
   * and whatever it held was released.
   */
  retarget (model: CompiledModel): Promise<boolean>
  /** The billing status the settle phase will give this outcome (a broken stream's error frame carries it). */
  billingStatus (outcome: Outcome): BillingStatus
  /** Called once, when the answer ended: settle then finish run from here. */
  end (outcome: Outcome): void
}

/** The per-request hooks of a plugin: what a route's chain is made of. */
export interface PluginHooks {
  admit?: (ctx: RequestContext, req: FastifyRequest) => MaybePromise<void>
  resolve?: (ctx: RequestContext, req: FastifyRequest) => MaybePromise<void>
  charge?: (ctx: RequestContext, req: FastifyRequest) => MaybePromise<void>
  settle?: (ctx: RequestContext, outcome: Outcome) => MaybePromise<void>
  finish?: (ctx: RequestContext, outcome: Outcome) => void
  /** The billing status this plugin's settle will give an outcome; the first plugin that answers decides. */
  billingStatus?: (ctx: RequestContext, outcome: Outcome) => BillingStatus | undefined
  /**
   * forward: only the one forwarding plugin has it as its own hook; another plugin may return it
   * from `forRoute` for a route it answers itself (a catalogue listing), in place of that one.
   */
  forward?: (ctx: RequestContext, req: FastifyRequest, reply: FastifyReply, control: ForwardControl) => Promise<void>
}

/**
 * A concern of the gateway: a name and the hooks it needs. The host runs each phase's hooks in
 * the order the composition root lists the plugins; a hook refuses a request by throwing a
 * GatewayError (admit, resolve, charge) and keeps per-request data in its own typed field of
 * `ctx.state` (see RequestState).
 *
 * admit    before the body is read: route, key headers, key and account state, limits.
 *          A refused client costs no parsing.
 * resolve  after the body: model, catalogue, capabilities, parameters, access. Runs again for
 *          every fallback model (`ctx.model` is then the fallback).
 * charge   wallet hold, quotas and caps; runs again for every fallback.
 * forward  exactly one plugin: sends upstream, relays, tries fallbacks via `control.retarget`
 *          (a route a plugin answers itself, such as a listing: that plugin, via forRoute).
 * settle   after the answer ended (or was refused): meter → cost → post / release. Once per
 *          request; a failing hook is logged and the next ones still run.
 * finish   after settle: request log, lease release, metrics. Must not throw.
 *
 * Each route runs its own chain, built once when the host registers it (Fastify's route-level
 * hooks): a plugin with `forRoute` says there which of its hooks apply to that route, decided
 * from the route's plan alone; one without runs its hooks on every route.
 */
export interface GatewayPlugin extends PluginHooks {
  readonly name: string
  /** Registers what the plugin needs on the gateway's Fastify instance (content-type parsers, decorators). */
  setup?: (app: FastifyInstance) => void
  /**
   * The hooks this plugin runs on `route`, chosen (and specialised) once from what the route
   * declares, so that no hook asks again per request whether it applies; {} when none does.
   * Absent: the plugin's own hooks run on every route.
   */
  forRoute?: (route: RoutePlan) => PluginHooks
  /** Called when the gateway closes, after every request finished and settled. */
  close?: () => Promise<void>
}

type Hook<P extends keyof PluginHooks | 'forward'> = NonNullable<GatewayPlugin[P]>

/** The hooks one route runs, per phase, in plugin order. */
export interface RouteChain {
  readonly admit: ReadonlyArray<Hook<'admit'>>
  readonly resolve: ReadonlyArray<Hook<'resolve'>>
  readonly charge: ReadonlyArray<Hook<'charge'>>
  readonly settle: ReadonlyArray<Hook<'settle'>>
  readonly finish: ReadonlyArray<Hook<'finish'>>
  readonly billingStatus: ReadonlyArray<Hook<'billingStatus'>>
  /** Who answers the route: the forwarding plugin, or the one plugin whose forRoute answers it itself. */
  readonly forward: Hook<'forward'>
}

/** The plugins, checked once at registration, and the one that forwards: what each route's chain is built from (routeChain). */
export interface PhasePlan {
  readonly plugins: readonly GatewayPlugin[]
  /** The forwarding plugin's hook: every route's `forward` but those a plugin answers itself. */
  readonly forward: Hook<'forward'>
}

const CHAIN_PHASES = ['admit', 'resolve', 'charge', 'settle', 'finish', 'billingStatus'] as const

function hooks<K extends keyof GatewayPlugin> (plugins: readonly GatewayPlugin[], phase: K, of: (p: GatewayPlugin) => Partial<GatewayPlugin> = (p) => p): Array<NonNullable<GatewayPlugin[K]>> {
  const out: Array<NonNullable<GatewayPlugin[K]>> = []
  for (const p of plugins) {
    const h = of(p)[phase]
    // Bound, so a plugin written as a class keeps its `this`.
    if (typeof h === 'function') out.push(h.bind(p) as NonNullable<GatewayPlugin[K]>)
  }
  return out
}

/** Checks the plugin list (unique names, exactly one forward); each route's chain orders its hooks (routeChain). */
export function planPhases (plugins: readonly GatewayPlugin[]): PhasePlan {
  const names = new Set<string>()
  for (const p of plugins) {
    if (names.has(p.name)) throw new Error(`gateway plugin ${p.name} is listed twice`)
    names.add(p.name)
  }
  const forwards = hooks(plugins, 'forward')
  const forwarders = plugins.filter((p) => p.forward !== undefined).map((p) => p.name)
  if (forwards.length !== 1 || forwards[0] === undefined) {
    throw new Error(`exactly one gateway plugin must forward; found ${forwarders.length === 0 ? 'none' : forwarders.join(', ')}`)
  }
  return Object.freeze({ plugins: Object.freeze([...plugins]), forward: forwards[0] })
}

/**
 * The chain of one route: per phase, in plugin order, the hooks that apply to it (each plugin's
 * `forRoute`, else its own hooks). Built once per route plan when the host registers the routes.
 */
export function routeChain (phases: PhasePlan, route: RoutePlan): RouteChain {
  const chosen = new Map<GatewayPlugin, PluginHooks>()
  for (const p of phases.plugins) chosen.set(p, p.forRoute === undefined ? p : p.forRoute(route))
  const of = (p: GatewayPlugin): PluginHooks => chosen.get(p) ?? p
  const chain: Record<typeof CHAIN_PHASES[number], readonly unknown[]> = { admit: [], resolve: [], charge: [], settle: [], finish: [], billingStatus: [] }
  for (const phase of CHAIN_PHASES) chain[phase] = Object.freeze(hooks(phases.plugins, phase, of))
  // A route a plugin answers itself: its forRoute returned a forward that is not its own hook.
  const answerers = phases.plugins.filter((p) => p.forRoute !== undefined && p.forward === undefined && typeof of(p).forward === 'function')
  if (answerers.length > 1) throw new Error(`route ${route.id} is answered by ${answerers.map((p) => p.name).join(' and ')}; one plugin may answer a route`)
  const answerer = answerers[0]
  const forward = answerer === undefined ? phases.forward : hooks([answerer], 'forward', of)[0] ?? phases.forward
  return Object.freeze({ ...chain, forward } as unknown as RouteChain)
}

/**
 * Runs one phase's hooks in order; a synchronous hook costs no promise. The loops a request runs
 * (here, the host's settle and finish, the feature, bound and parameter checks) count by index: a
 * `for…of` or an array destructuring steps an iterator, and where V8 did not optimize it away each
 * step allocated a result object (sampled at 50 connections, chat JSON: 76 KB allocated per
 * request with them, 70 KB without).
 */
export async function runPhase (
  list: ReadonlyArray<(ctx: RequestContext, req: FastifyRequest) => MaybePromise<void>>,
  ctx: RequestContext,
  req: FastifyRequest
): Promise<void> {
  for (let i = 0; i < list.length; i++) {
    const r = (list[i] as typeof list[number])(ctx, req)
    if (r !== undefined) await r
  }
}
