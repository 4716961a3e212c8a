import type { BodyKind, EnvelopeKind, GatewayConfig, ListingFormat, RouteConfig } from '../config/types.js'
import { compileOperations, type CompiledOperation, type CompiledOperations } from '../operations/compile.js'

export interface RoutePlan {
  /** `METHOD path` of the declaration (aliases share the plan). */
  readonly id: string
  readonly method: RouteConfig['method']
  readonly path: string
  readonly family: string
  readonly envelope: EnvelopeKind
  readonly operation: string
  /** The compiled facts of `operation`: meter, job role, usage chunk, worst-case bounds. */
  readonly op: CompiledOperation
  readonly body: readonly BodyKind[]
  readonly itemLimits: Readonly<Record<string, number>>
  readonly response: RouteConfig['response']
  /** The operation's job role (the route's own `job` must agree with it). */
  readonly job: RouteConfig['job']
  readonly upstream: RouteConfig['upstream']
  /** True when the model id comes from a `{model}` path segment. */
  readonly modelInPath: boolean
  /**
   * False for a route whose requests name no model (a job poll or download: a fixed `upstream`
   * and no `{model}`): nothing of it is resolved against the catalogue, held or priced.
   */
  readonly namesModel: boolean
  /** This route's own body cap (`body_limit_bytes`), when it sets one. */
  readonly bodyLimitBytes: number | undefined
  /** Body parameters that ask for deferred work (refused unless a job route). */
  readonly deferredParams: readonly string[]
  /** Longest wait for the upstream's first byte before REQUEST_TIMEOUT (`first_byte_timeout_ms`); undefined: none. */
  readonly firstByteTimeoutMs: number | undefined
  /** This route's bound on a non-streamed answer's first byte (`answer_timeout_ms`); undefined: the provider's. */
  readonly answerTimeoutMs: number | undefined
  /**
   * The format of the catalogue listing the gateway answers on this route itself (a family's
   * `listings`, plugins/concerns/listings); undefined on every declared route (those are forwarded).
   */
  readonly listing: ListingFormat | undefined
}

/** A plan served instead of a plain route's own to requests that carry `header` (two families on one path). */
export interface HeaderVariant {
  readonly header: string
  readonly plan: RoutePlan
}

/**
 * One Fastify route: either a plain path with one plan (or, with `variants`, the first variant
 * whose header the request carries), or a wildcard that dispatches on the rest of the URL.
 */
export type FastifyRouteSpec =
  | { kind: 'plain', method: RouteConfig['method'], url: string, plan: RoutePlan, variants?: readonly HeaderVariant[] }
  | { kind: 'model-wildcard', method: RouteConfig['method'], url: string, prefix: string, matchers: readonly ModelMatcher[] }

export interface ModelMatcher {
  readonly plan: RoutePlan
  /** Applied to the raw path after the prefix; group 1 is the (still encoded) model id, possibly empty (REQUEST_MODEL_REQUIRED, not a missing route). */
  readonly pattern: RegExp
}

export interface CompiledRoutes {
  readonly plans: readonly RoutePlan[]
  readonly fastifyRoutes: readonly FastifyRouteSpec[]
  /** Family envelope for a path no route matched, by longest declared prefix. */
  envelopeForPath (path: string): EnvelopeKind
}

function escapeRegExp (s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
}

/** `{id}` → `:id`; a literal `:` is escaped as `::` for find-my-way. */
export function toFastifyPath (template: string): string {
  return template.replace(/:/g, '::').replace(/\{([a-z_]+)\}/g, ':$1')
}

/** Pure: config in, route plans out. Request-time code only ever sees the plans. */
export function compileRoutes (config: GatewayConfig, operations: CompiledOperations = compileOperations(config)): CompiledRoutes {
  const plans: RoutePlan[] = []
  const plain: FastifyRouteSpec[] = []
  const wildcards = new Map<string, { method: RouteConfig['method'], prefix: string, matchers: ModelMatcher[] }>()

  for (const r of config.routes) {
    const family = config.families[r.family]
    if (!family) throw new Error(`route ${r.path} names unknown family ${r.family}`)
    const op = operations.get(r.operation)
    if (!op) throw new Error(`route ${r.path} names unknown operation ${r.operation}`)
    const plan: RoutePlan = Object.freeze({
      id: `${r.method} ${r.path}`,
      method: r.method,
      path: r.path,
      family: r.family,
      envelope: family.envelope,
      operation: r.operation,
      op,
      body: Object.freeze([...(r.body ?? ['json'])]),
      itemLimits: Object.freeze({ ...(r.item_limits ?? {}) }),
      response: r.response ?? 'auto',
      job: op.job?.role,
      upstream: r.upstream,
      modelInPath: r.path.includes('{model}'),
      namesModel: r.upstream === undefined || r.path.includes('{model}'),
      bodyLimitBytes: r.body_limit_bytes,
      deferredParams: Object.freeze([...(r.deferred_params ?? [])]),
      firstByteTimeoutMs: r.first_byte_timeout_ms,
      answerTimeoutMs: r.answer_timeout_ms,
      listing: undefined
    })
    plans.push(plan)
    for (const path of [r.path, ...(r.aliases ?? [])]) {
      const at = path.indexOf('{model}')
      if (at === -1) {
        plain.push({ kind: 'plain', method: r.method, url: toFastifyPath(path), plan })
        continue
      }
      const prefix = path.slice(0, at)
      const rest = path.slice(at + '{model}'.length)
      const key = `${r.method} ${prefix}`
      let group = wildcards.get(key)
      if (!group) {
        group = { method: r.method, prefix, matchers: [] }
        wildcards.set(key, group)
      }
      group.matchers.push({ plan, pattern: new RegExp(`^(.*)${escapeRegExp(rest)}$`) })
    }
  }

  const fastifyRoutes: FastifyRouteSpec[] = [...plain]
  for (const g of wildcards.values()) {
    fastifyRoutes.push({ kind: 'model-wildcard', method: g.method, url: toFastifyPath(g.prefix) + '*', prefix: g.prefix, matchers: Object.freeze(g.matchers) })
  }

  const prefixes = Object.values(config.families)
    .flatMap((f) => f.prefixes.map((p) => ({ prefix: p, envelope: f.envelope })))
    .sort((a, b) => b.prefix.length - a.prefix.length)
  const fallbackEnvelope: EnvelopeKind = config.families.chat?.envelope ?? 'chat'

  return {
    plans: Object.freeze(plans),
    fastifyRoutes: Object.freeze(fastifyRoutes),
    envelopeForPath (path: string): EnvelopeKind {
      for (const p of prefixes) if (path.startsWith(p.prefix)) return p.envelope
      return fallbackEnvelope
    }
  }
}

/** A route compiled apart from `routes:` (a listing), to be served beside the declared ones. */
export interface AddedRoute {
  readonly plan: RoutePlan
  /** Served instead of the plain route of the same method and path to requests carrying this header. */
  readonly whenHeader?: string | undefined
}

/**
 * The routes with `added` served beside them (plain paths, no `{model}`), their plans appended.
 * A route with `whenHeader` becomes a variant of the plain route of its method and path (which
 * must exist, declared or added); two plain routes on one method and path are refused (check
 * reports both with their positions first).
 */
export function withAddedRoutes (routes: CompiledRoutes, added: readonly AddedRoute[]): CompiledRoutes {
  if (added.length === 0) return routes
  type Plain = Extract<FastifyRouteSpec, { kind: 'plain' }>
  const specs: FastifyRouteSpec[] = [...routes.fastifyRoutes]
  const plainAt = new Map<string, number>()
  specs.forEach((s, i) => { if (s.kind === 'plain') plainAt.set(`${s.method} ${s.url}`, i) })
  const ordered = [...added.filter((a) => a.whenHeader === undefined), ...added.filter((a) => a.whenHeader !== undefined)]
  for (const { plan, whenHeader } of ordered) {
    const url = toFastifyPath(plan.path)
    const key = `${plan.method} ${url}`
    const at = plainAt.get(key)
    if (whenHeader === undefined) {
      if (at !== undefined) throw new Error(`route ${key} is declared twice`)
      plainAt.set(key, specs.length)
      specs.push({ kind: 'plain', method: plan.method, url, plan })
      continue
    }
    const base = at === undefined ? undefined : specs[at] as Plain | undefined
    if (at === undefined || base === undefined) throw new Error(`route ${key} (when ${whenHeader}) has no route without a header to stand beside`)
    specs[at] = { ...base, variants: Object.freeze([...(base.variants ?? []), Object.freeze({ header: whenHeader, plan })]) }
  }
  return {
    plans: Object.freeze([...routes.plans, ...added.map((a) => a.plan)]),
    fastifyRoutes: Object.freeze(specs),
    envelopeForPath: routes.envelopeForPath
  }
}
