import { Redis } from 'ioredis'
import { KeyCache } from '../keys/key-cache.js'
import { LocalInvalidationBus, type InvalidationBus } from '../keys/invalidation-bus.js'
import { RedisInvalidationBus } from '../keys/redis-invalidation-bus.js'
import { systemClock, type Clock } from '../store/clock.js'
import { openStore } from '../store/index.js'
import { RequestLogWriter } from '../store/request-log/writer.js'
import type { Store } from '../store/types.js'

import { KEY_INVALIDATION_CHANNEL } from '../admin/constants.js'

export interface ServiceEnv {
  /** PostgreSQL when set (many instances), else embedded SQLite under dataDir. */
  databaseUrl?: string | undefined
  /** Redis when set: cache invalidation crosses instances. */
  redisUrl?: string | undefined
  dataDir?: string | undefined
  secret?: string | undefined
  /** PostgreSQL schema (tests isolate themselves with one). */
  schema?: string | undefined
  /** Redis channel override (tests isolate themselves with one). */
  channel?: string | undefined
  /** Redis of the shared rate limits and stream leases; default `redisUrl` (none: limits per instance). */
  limitsRedisUrl?: string | undefined
  /** Prefix of every Redis key the limits write (default `gw:`; tests isolate themselves with one). */
  redisPrefix?: string | undefined
  /** Longest wait for one limits command (config `limits.redis_timeout_ms`; default 250). */
  limitsRedisTimeoutMs?: number | undefined
  clock?: Clock
  defaultTier?: string
  /** Negative key cache (config `auth.unknown_key_ttl_ms` / `unknown_key_cache_max`); KeyCache defaults when absent. */
  unknownKeyTtlMs?: number
  unknownKeyCacheMax?: number
}

/** The stateful parts behind the gateway: one store, one key cache fed by one invalidation bus. */
export interface GatewayServices {
  readonly store: Store
  readonly keyCache: KeyCache
  /** Batched request log writes; closed (drained) after the server stopped taking requests. */
  readonly requestLog: RequestLogWriter
  readonly clock: Clock
  /** Redis for the limits shared by all instances, and the prefix of its keys; absent: limits per instance. */
  readonly limitsRedis?: LimitsRedis
  close (): Promise<void>
}

export interface LimitsRedis {
  readonly client: Redis
  readonly prefix: string
}

/**
 * The limits' Redis connection. No offline queue and no retries per command: while Redis is
 * away a check fails at once and the instance limits alone (docs/limits.md), instead of
 * queueing admissions behind a reconnect. The connection keeps reconnecting in the background.
 */
function openLimitsRedis (url: string, prefix: string, timeoutMs: number): LimitsRedis {
  const client = new Redis(url, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    connectionName: 'gateway-limits',
    commandTimeout: timeoutMs,
    retryStrategy: (times) => Math.min(times * 200, 2000)
  })
  // Reported by the limits when a check falls back; an unhandled 'error' event would crash.
  client.on('error', () => {})
  return { client, prefix }
}

export function serviceEnvFromProcess (env: NodeJS.ProcessEnv = process.env): ServiceEnv {
  return {
    databaseUrl: env.DATABASE_URL,
    redisUrl: env.REDIS_URL,
    dataDir: env.GATEWAY_DATA_DIR,
    secret: env.GATEWAY_SECRET,
    schema: env.DATABASE_SCHEMA,
    redisPrefix: env.REDIS_PREFIX
  }
}

export async function openServices (env: ServiceEnv): Promise<GatewayServices> {
  const clock = env.clock ?? systemClock
  const bus: InvalidationBus = env.redisUrl
    ? new RedisInvalidationBus(env.redisUrl, env.channel ?? KEY_INVALIDATION_CHANNEL)
    : new LocalInvalidationBus()
  await bus.ready()
  let store: Store
  try {
    store = await openStore({
      databaseUrl: env.databaseUrl,
      dataDir: env.dataDir,
      secret: env.secret,
      schema: env.schema,
      clock,
      bus,
      defaultTier: env.defaultTier
    })
  } catch (err) {
    await bus.close()
    throw err
  }
  const keyCache = new KeyCache({
    bus,
    clock,
    ...(env.unknownKeyTtlMs !== undefined ? { unknownTtlMs: env.unknownKeyTtlMs } : {}),
    ...(env.unknownKeyCacheMax !== undefined ? { unknownMax: env.unknownKeyCacheMax } : {})
  })
  const limitsUrl = env.limitsRedisUrl ?? env.redisUrl
  const limitsRedis = limitsUrl ? openLimitsRedis(limitsUrl, env.redisPrefix ?? 'gw:', env.limitsRedisTimeoutMs ?? 250) : undefined
  const requestLog = new RequestLogWriter(store.requestLog, {
    onError: (err, rows) => process.emitWarning(`request log: ${err.message} (${rows.length} rows)`)
  })
  return {
    store,
    keyCache,
    requestLog,
    clock,
    ...(limitsRedis ? { limitsRedis } : {}),
    async close () {
      limitsRedis?.client.disconnect()
      keyCache.close()
      await requestLog.close()
      await store.close()
      await bus.close()
    }
  }
}
