import type { LimitsConfig } from '../../foundation/config/types.js'
import { gatewayError } from '../../foundation/errors/index.js'
import type { Clock } from '../../foundation/store/clock.js'
import { LocalLimits } from './local.js'
import type { Policy, RequestLimits } from './policy.js'
import { withLimitsCommands, type LimitsClient } from './scripts.js'
import type { Redis } from 'ioredis'

export const WINDOW_MS = 60_000
/** A stream may end at any moment: the wait a refused stream is told. */
export const STREAM_RETRY_AFTER_SECONDS = 1

/** A stream lease a request holds until its finish. */
export interface StreamLease {
  readonly account: string
  /** The key whose own streams it also counts in (the key has a policy of its own), else null. */
  readonly key: string | null
  readonly id: string
  /** Held in Redis (renewed, released there) rather than in this instance's memory. */
  readonly shared: boolean
}

/** Who a request counts against. */
export interface Owner {
  readonly keyId: string
  readonly accountId: string
}

export interface LimiterDeps {
  config: LimitsConfig
  clock: Clock
  redis?: { client: Redis, prefix: string }
  /** Told when Redis failed and the instance decided alone (throttled by the caller of warn). */
  warn: (err: unknown) => void
}

const rateExceeded = (waitMs: number, byKey: boolean): Error => gatewayError('LIMIT_RATE_EXCEEDED', {
  retryAfterSeconds: Math.max(1, Math.ceil(waitMs / 1000)),
  detail: byKey ? 'Too many requests for this key in the last minute.' : 'Too many requests for this account (all its keys together) in the last minute.'
})
const streamsExceeded = (byKey: boolean): Error => gatewayError('LIMIT_RATE_EXCEEDED', {
  retryAfterSeconds: STREAM_RETRY_AFTER_SECONDS,
  detail: byKey ? 'Too many streams open for this key.' : 'Too many streams open for this account.'
})

// Names in the in-process limiter (one map for windows, one for leases): an account and a key never share one.
const localAccount = (id: string): string => 'a:' + id
const localKey = (id: string): string => 'k:' + id

/**
 * Requests per minute (sliding 60 s windows) and concurrent streams, per account (its tier,
 * summed over its keys) and per key (its own policy, when it has one).
 * With Redis: one script per admission (the leases included when the route always streams),
 * shared by every instance. Without Redis, or when Redis fails or is slower than
 * `redis_timeout_ms`: the same limits in this instance's memory (fail-open to per-instance
 * limits; the wallet is never involved).
 */
export class Limiter {
  readonly local: LocalLimits
  private readonly redis: LimitsClient | null
  private readonly prefix: string
  private readonly leaseTtl: number
  /** Leases this instance holds in Redis, by request id → their sets: renewed every renew period. */
  private readonly live = new Map<string, readonly string[]>()
  private renewTimer: NodeJS.Timeout | null = null

  constructor (private readonly deps: LimiterDeps) {
    this.local = new LocalLimits(WINDOW_MS, deps.config.local_max_entries)
    this.redis = deps.redis ? withLimitsCommands(deps.redis.client) : null
    this.prefix = deps.redis?.prefix ?? ''
    this.leaseTtl = deps.config.stream_lease_ttl_ms
  }

  get shared (): boolean {
    return this.redis !== null
  }

  /** Leases this instance renews (tests, metrics). */
  get liveLeases (): number {
    return this.live.size
  }

  /**
   * Admits one request of `who` under `limits`; with `stream`, also takes its stream lease(s).
   * Throws LIMIT_RATE_EXCEEDED; returns the lease taken, if any.
   */
  admitLocal (who: Owner, id: string, limits: RequestLimits, stream: boolean): StreamLease | undefined {
    const local = this.local
    const account = localAccount(who.accountId)
    const key = limits.key === null ? null : localKey(who.keyId)
    if (stream) {
      if (local.streamsOf(account) >= limits.account.concurrentStreams) throw streamsExceeded(false)
      if (key !== null && local.streamsOf(key) >= (limits.key as Policy).concurrentStreams) throw streamsExceeded(true)
    }
    const now = this.deps.clock.now().getTime()
    const waitAccount = local.wait(account, limits.account.requestsPerMinute, now)
    const waitKey = key === null ? 0 : local.wait(key, (limits.key as Policy).requestsPerMinute, now)
    if (waitAccount > 0 || waitKey > 0) throw rateExceeded(Math.max(waitAccount, waitKey), waitKey > waitAccount)
    local.record(account, now)
    if (key !== null) local.record(key, now)
    if (!stream) return undefined
    local.acquire(account, id, limits.account.concurrentStreams)
    if (key !== null) local.acquire(key, id, (limits.key as Policy).concurrentStreams)
    return { account: who.accountId, key: key === null ? null : who.keyId, id, shared: false }
  }

  async admit (who: Owner, id: string, limits: RequestLimits, stream: boolean): Promise<StreamLease | undefined> {
    const redis = this.redis as LimitsClient
    const own = limits.key
    let answer: [number, number, number]
    try {
      answer = await redis.gwLimitAdmit(
        this.accountRate(who.accountId), this.keyRate(who.keyId), this.accountLeases(who.accountId), this.keyLeases(who.keyId),
        limits.account.requestsPerMinute, own === null ? 0 : own.requestsPerMinute, WINDOW_MS, id,
        stream ? limits.account.concurrentStreams : 0, stream && own !== null ? own.concurrentStreams : 0, this.leaseTtl
      )
    } catch (err) {
      this.deps.warn(err)
      return this.admitLocal(who, id, limits, stream)
    }
    if (answer[0] === 1) throw rateExceeded(answer[1], answer[2] === 2)
    if (answer[0] === 2) throw streamsExceeded(answer[2] === 2)
    if (!stream) return undefined
    return this.keep(who, id, own !== null)
  }

  /** The lease(s) of a request whose body asked to stream (the rate was counted at admission). */
  async lease (who: Owner, id: string, limits: RequestLimits): Promise<StreamLease> {
    const own = limits.key
    if (this.redis !== null) {
      let taken: number | null = null
      try {
        taken = await this.redis.gwLeaseTake(this.accountLeases(who.accountId), this.keyLeases(who.keyId),
          limits.account.concurrentStreams, own === null ? 0 : own.concurrentStreams, this.leaseTtl, id)
      } catch (err) {
        this.deps.warn(err)
      }
      if (taken === 1) return this.keep(who, id, own !== null)
      if (taken === 0 || taken === 2) throw streamsExceeded(taken === 2)
    }
    const account = localAccount(who.accountId)
    const key = own === null ? null : localKey(who.keyId)
    if (key !== null && this.local.streamsOf(key) >= (own as Policy).concurrentStreams) throw streamsExceeded(true)
    if (!this.local.acquire(account, id, limits.account.concurrentStreams)) throw streamsExceeded(false)
    if (key !== null) this.local.acquire(key, id, (own as Policy).concurrentStreams)
    return { account: who.accountId, key: key === null ? null : who.keyId, id, shared: false }
  }

  release (lease: StreamLease): void {
    if (!lease.shared) {
      this.local.release(localAccount(lease.account), lease.id)
      if (lease.key !== null) this.local.release(localKey(lease.key), lease.id)
      return
    }
    const sets = this.live.get(lease.id)
    this.live.delete(lease.id)
    if (this.live.size === 0) this.stopRenewing()
    // A release that fails leaves the lease to expire (within the lease TTL).
    const redis = this.redis as LimitsClient
    for (const set of sets ?? []) redis.zrem(set, lease.id).catch((err: unknown) => { this.deps.warn(err) })
  }

  private accountRate (id: string): string { return this.prefix + 'rpm-account:' + id }
  private keyRate (id: string): string { return this.prefix + 'rpm:' + id }
  private accountLeases (id: string): string { return this.prefix + 'streams:' + id }
  private keyLeases (id: string): string { return this.prefix + 'streams-key:' + id }

  private keep (who: Owner, id: string, withKey: boolean): StreamLease {
    this.live.set(id, withKey ? [this.accountLeases(who.accountId), this.keyLeases(who.keyId)] : [this.accountLeases(who.accountId)])
    if (this.renewTimer === null) {
      this.renewTimer = setInterval(() => { this.renew() }, this.deps.config.stream_lease_renew_ms)
      this.renewTimer.unref()
    }
    return { account: who.accountId, key: withKey ? who.keyId : null, id, shared: true }
  }

  /** Renews every live lease of this instance in one pipeline. */
  private renew (): void {
    const redis = this.redis
    if (redis === null || this.live.size === 0) return
    const pipe = redis.pipeline()
    for (const [id, sets] of this.live) {
      for (const set of sets) (pipe as unknown as LimitsCommands).gwLeaseRenew(set, this.leaseTtl, id)
    }
    pipe.exec().catch((err: unknown) => { this.deps.warn(err) })
  }

  private stopRenewing (): void {
    if (this.renewTimer !== null) clearInterval(this.renewTimer)
    this.renewTimer = null
  }

  /** Stops renewing (the gateway closes after every request finished). */
  close (): void {
    this.stopRenewing()
    this.live.clear()
  }
}

type LimitsCommands = Pick<LimitsClient, 'gwLeaseRenew'>
