import type { LimitsConfig } from '../config/types.js'
import { gatewayError } from '../errors/index.js'
import type { Clock } from '../store/clock.js'
import { LocalLimits } from './local.js'
import type { Policy } from './policy.js'
import { withLimitsCommands, type LimitsClient } from './scripts.js'
import type { Redis } from 'ioredis'

export const WINDOW_MS = 60_000
/** A stream may end at any moment: the wait a refused stream is told. */
export const STREAM_RETRY_AFTER_SECONDS = 1

/** A stream lease a request holds until its finish. */
export interface StreamLease {
  readonly account: string
  readonly id: string
  /** Held in Redis (renewed, released there) rather than in this instance's memory. */
  readonly shared: boolean
}

export interface LimiterDeps {
  config: LimitsConfig
  clock: Clock
  redis?: { client: Redis, prefix: string }
  /** Told when Redis failed and the instance decided alone (throttled by the caller of warn). */
  warn: (err: unknown) => void
}

const rateExceeded = (waitMs: number): Error => gatewayError('LIMIT_RATE_EXCEEDED', {
  retryAfterSeconds: Math.max(1, Math.ceil(waitMs / 1000)),
  detail: 'Too many requests for this key in the last minute.'
})
const streamsExceeded = (): Error => gatewayError('LIMIT_RATE_EXCEEDED', {
  retryAfterSeconds: STREAM_RETRY_AFTER_SECONDS,
  detail: 'Too many streams open for this account.'
})

/**
 * Requests per minute per key (sliding 60 s window) and concurrent streams per account.
 * With Redis: one script per admission (the lease included when the route always streams),
 * shared by every instance. Without Redis, or when Redis fails or is slower than
 * `redis_timeout_ms`: the same limits in this instance's memory (fail-open to per-instance
 * limits; the wallet is never involved).
 */
export class Limiter {
  readonly local: LocalLimits
  private readonly redis: LimitsClient | null
  private readonly prefix: string
  private readonly leaseTtl: number
  /** Leases this instance holds in Redis, by request id → their set: renewed every renew period. */
  private readonly live = new Map<string, string>()
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
   * Admits one request of `keyId` under `policy`; with `stream`, also takes a lease for
   * `account`. Throws LIMIT_RATE_EXCEEDED; returns the lease taken, if any.
   */
  admitLocal (keyId: string, account: string, id: string, policy: Policy, stream: boolean): StreamLease | undefined {
    const local = this.local
    if (stream && local.streamsOf(account) >= policy.concurrentStreams) throw streamsExceeded()
    const wait = local.take(keyId, policy.requestsPerMinute, this.deps.clock.now().getTime())
    if (wait > 0) throw rateExceeded(wait)
    if (!stream) return undefined
    local.acquire(account, id, policy.concurrentStreams)
    return { account, id, shared: false }
  }

  async admit (keyId: string, account: string, id: string, policy: Policy, stream: boolean): Promise<StreamLease | undefined> {
    const redis = this.redis as LimitsClient
    let answer: [number, number]
    try {
      answer = await redis.gwLimitAdmit(
        this.prefix + 'rpm:' + keyId, this.prefix + 'streams:' + account,
        policy.requestsPerMinute, WINDOW_MS, id, stream ? policy.concurrentStreams : 0, this.leaseTtl
      )
    } catch (err) {
      this.deps.warn(err)
      return this.admitLocal(keyId, account, id, policy, stream)
    }
    if (answer[0] === 1) throw rateExceeded(answer[1])
    if (answer[0] === 2) throw streamsExceeded()
    if (!stream) return undefined
    this.keep(id, account)
    return { account, id, shared: true }
  }

  /** A lease for a request whose body asked to stream (the rate was counted at admission). */
  async lease (account: string, id: string, policy: Policy): Promise<StreamLease> {
    if (this.redis !== null) {
      let taken: number | null = null
      try {
        taken = await this.redis.gwLeaseTake(this.prefix + 'streams:' + account, policy.concurrentStreams, this.leaseTtl, id)
      } catch (err) {
        this.deps.warn(err)
      }
      if (taken === 1) {
        this.keep(id, account)
        return { account, id, shared: true }
      }
      if (taken === 0) throw streamsExceeded()
    }
    if (!this.local.acquire(account, id, policy.concurrentStreams)) throw streamsExceeded()
    return { account, id, shared: false }
  }

  release (lease: StreamLease): void {
    if (!lease.shared) {
      this.local.release(lease.account, lease.id)
      return
    }
    this.live.delete(lease.id)
    if (this.live.size === 0) this.stopRenewing()
    // A release that fails leaves the lease to expire (within the lease TTL).
    ;(this.redis as LimitsClient).zrem(this.prefix + 'streams:' + lease.account, lease.id).catch((err: unknown) => { this.deps.warn(err) })
  }

  private keep (id: string, account: string): void {
    this.live.set(id, this.prefix + 'streams:' + account)
    if (this.renewTimer === null) {
      this.renewTimer = setInterval(() => { this.renew() }, this.deps.config.stream_lease_renew_ms)
      this.renewTimer.unref()
    }
  }

  /** Renews every live lease of this instance in one pipeline. */
  private renew (): void {
    const redis = this.redis
    if (redis === null || this.live.size === 0) return
    const pipe = redis.pipeline()
    for (const [id, set] of this.live) (pipe as unknown as LimitsCommands).gwLeaseRenew(set, this.leaseTtl, id)
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
