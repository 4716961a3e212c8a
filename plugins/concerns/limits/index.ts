import type { FastifyBaseLogger } from 'fastify'
import type { LimitsConfig, ServerConfig } from '../../foundation/config/types.js'
import type { RequestContext } from '../../foundation/pipeline/context.js'
import type { GatewayPlugin } from '../../foundation/pipeline/plugin.js'
import type { Clock } from '../../foundation/store/clock.js'
import type { Redis } from 'ioredis'
import { capConnectionsPerAddress } from './connection-cap.js'
import { Limiter, type Owner, type StreamLease } from './limiter.js'
import type { Policies, RequestLimits } from './policy.js'

export { capConnectionsPerAddress, ConnectionCounts } from './connection-cap.js'
export { compilePolicies, type Policies, type Policy, type RequestLimits } from './policy.js'
export { Limiter, WINDOW_MS, STREAM_RETRY_AFTER_SECONDS, type Owner, type StreamLease } from './limiter.js'
export { LocalLimits } from './local.js'

declare module '../../foundation/pipeline/context.js' {
  interface RequestState {
    /** The concurrent-stream lease of a streaming request, released in finish. */
    lease: StreamLease
  }
}

export interface LimitsDeps {
  server: ServerConfig
  limits: LimitsConfig
  /** The plan's slice: the tiers and key policies compiled (compilePolicies). */
  policies: Policies
  clock: Clock
  /** Shared limits across instances; absent: per instance. */
  redis?: { client: Redis, prefix: string } | undefined
  log?: FastifyBaseLogger
  /** The limiter built for this gateway (tests read its state). */
  onLimiter?: (limiter: Limiter) => void
}

/** How often a Redis failure is logged at most (the limits fall back meanwhile). */
const WARN_EVERY_MS = 10_000

// Module-level async functions, not closures per request.
async function admitShared (limiter: Limiter, ctx: RequestContext, who: Owner, limits: RequestLimits, stream: boolean): Promise<void> {
  const lease = await limiter.admit(who, ctx.requestId, limits, stream)
  if (lease !== undefined) ctx.state.lease = lease
}

async function leaseFor (limiter: Limiter, ctx: RequestContext, who: Owner, limits: RequestLimits): Promise<void> {
  ctx.state.lease = await limiter.lease(who, ctx.requestId, limits)
}

function streamsByBody (ctx: RequestContext): boolean {
  const body = ctx.body
  return body !== undefined && body.kind === 'json' && body.json.stream === true
}

/** The account's tier (for the sum of its keys) and the key's own policy when it has a different one. */
function limitsOf (policies: Policies, keyPolicy: string | null, accountTier: string): RequestLimits {
  const tier = policies.tier(accountTier)
  const own = policies.resolve(keyPolicy, accountTier)
  return own === tier ? tier.alone : { account: tier, key: own }
}

/**
 * setup: a cap on the connections one client address holds open at once
 * (`server.max_connections_per_address`).
 * admit (after auth, before the body): requests per minute of the account (its tier bounds the
 * sum of its keys) and of the key (its own policy, when it has one), and the stream lease(s)
 * when the route always streams, in one Redis round trip.
 * charge: a stream lease for a request whose body asked to stream.
 * finish: the lease is released (end, abort, error alike).
 * With `limits.enabled: false` only the connection cap is registered: no hook runs per request.
 * (The platform image pause is the caps concern's.)
 */
export function limitsPlugin (deps: LimitsDeps): GatewayPlugin {
  const setup: GatewayPlugin['setup'] = (app) => { capConnectionsPerAddress(app, deps.server.max_connections_per_address) }
  if (!deps.limits.enabled) return { name: 'limits', setup }
  const policies: Policies = deps.policies
  let warnedAt = -Infinity
  const limiter = new Limiter({
    config: deps.limits,
    clock: deps.clock,
    ...(deps.redis ? { redis: deps.redis } : {}),
    warn: (err) => {
      const now = Date.now()
      if (now - warnedAt < WARN_EVERY_MS) return
      warnedAt = now
      deps.log?.warn({ err: err instanceof Error ? err.message : String(err) }, 'limits: Redis failed; this instance enforces the limits alone meanwhile')
    }
  })
  deps.onLimiter?.(limiter)
  const shared = limiter.shared
  /** admit on a route that always streams (`stream`: a lease with the admission) or not. */
  const admitter = (stream: boolean) => (ctx: RequestContext): Promise<void> | undefined => {
    const auth = ctx.state.auth
    if (auth === undefined) return
    const limits = limitsOf(policies, auth.key.rateLimitPolicy, auth.account.tier)
    const who: Owner = { keyId: auth.key.id, accountId: auth.account.id }
    if (!shared) {
      const lease = limiter.admitLocal(who, ctx.requestId, limits, stream)
      if (lease !== undefined) ctx.state.lease = lease
      return
    }
    return admitShared(limiter, ctx, who, limits, stream)
  }
  const admitStream = admitter(true)
  const admitOnce = admitter(false)
  const plugin: GatewayPlugin = {
    name: 'limits',
    setup,
    admit: (ctx) => ctx.plan.response === 'sse' ? admitStream(ctx) : admitOnce(ctx),
    // Whether the route always streams is its own; only a JSON body can ask to stream.
    forRoute: (route) => ({
      admit: route.response === 'sse' ? admitStream : admitOnce,
      ...(route.body.includes('json') ? { charge: plugin.charge } : {}),
      finish: plugin.finish
    }),
    charge (ctx) {
      if (ctx.state.lease !== undefined || !streamsByBody(ctx)) return
      const auth = ctx.state.auth
      if (auth === undefined) return
      return leaseFor(limiter, ctx, { keyId: auth.key.id, accountId: auth.account.id }, limitsOf(policies, auth.key.rateLimitPolicy, auth.account.tier))
    },
    finish (ctx) {
      const lease = ctx.state.lease
      if (lease === undefined) return
      delete ctx.state.lease
      limiter.release(lease)
    },
    close: async () => { limiter.close() }
  }
  return plugin
}
