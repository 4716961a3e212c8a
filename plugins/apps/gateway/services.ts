import { Redis } from 'ioredis'
import { KeyCache, watchKeyChanges, type KeyChangeWatcher } from '../../concerns/auth/index.js'
import { createKeyChangeFeed } from '../../foundation/store/key-changes.js'
import { LocalInvalidationBus, type InvalidationBus } from '../../foundation/keys/invalidation-bus.js'
import { KEY_INVALIDATION_CHANNEL, RedisInvalidationBus } from '../../foundation/keys/redis-invalidation-bus.js'
import { systemClock, type Clock } from '../../foundation/store/clock.js'
import { openStore } from '../../foundation/store/index.js'
import { RequestLogWriter } from '../../foundation/store/request-log/writer.js'
import type { Store } from '../../foundation/store/types.js'
import { ServerSecretError } from '../../foundation/keys/server-secret.js'
import { StartupError, causeOf, whereOf } from './startup-error.js'

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
  /** How often the key cache reads the store's revision of keys and accounts (default 500 ms; docs/security.md). */
  keyChangePollMs?: number
  /** Longest a request log row waits in the writer's queue before a flush (default 100 ms). */
  requestLogFlushMs?: number
}

/** The stateful parts behind the gateway: one store, one key cache fed by one invalidation bus. */
export interface GatewayServices {
  readonly store: Store
  readonly keyCache: KeyCache
  /** Reads the store's revision of keys and accounts every 500 ms and drops what changed from the key cache (openServices starts it; services built by hand may have none). */
  readonly keyChanges?: KeyChangeWatcher
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
 * Auto-pipelining: the admissions, leases and releases of one event-loop turn go out in one
 * write (ioredis gathers them until setImmediate). At 1,500 req/s it cut Redis's CPU per
 * request from 48–49 to 28–33 µs (chat JSON) and from 87–91 to 47–50 µs (chat SSE)
 * (bench/cost.ts, two A/B pairs).
 */
function openLimitsRedis (url: string, prefix: string, timeoutMs: number): LimitsRedis {
  const client = new Redis(url, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    connectionName: 'gateway-limits',
    enableAutoPipelining: true,
    commandTimeout: timeoutMs,
    retryStrategy: (times) => Math.min(times * 200, 2000)
  })
  // Reported by the limits when a check falls back; an unhandled 'error' event would crash.
  client.on('error', () => {})
  return { client, prefix }
}

/**
 * Resolves once the limits' connection is ready or has failed once. Without this wait the first
 * requests after a start met a connection still in its ready check: with no offline queue each
 * of them fell back to this instance's own limits, and a stream leased in memory then went
 * uncounted by the shared lease set. Unreachable, the gateway still starts and limits alone.
 */
async function firstAnswer (client: Redis): Promise<void> {
  if (client.status === 'ready') return
  await new Promise<void>((resolve) => {
    const done = (): void => {
      client.off('ready', done)
      client.off('error', done)
      client.off('end', done)
      resolve()
    }
    client.once('ready', done)
    client.once('error', done)
    client.once('end', done)
  })
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
  // Connection errors before the bus is ready are the start-up failure's one line, not warnings.
  let busReady = false
  let lastWarning = ''
  let connectError: Error | undefined
  const onBusError = (err: Error): void => {
    if (!busReady) {
      connectError ??= err
      return
    }
    if (err.message === lastWarning) return
    lastWarning = err.message
    process.emitWarning(`redis invalidation bus: ${err.message}`)
  }
  const bus: InvalidationBus = env.redisUrl
    ? new RedisInvalidationBus(env.redisUrl, env.channel ?? KEY_INVALIDATION_CHANNEL, { onError: onBusError })
    : new LocalInvalidationBus()
  try {
    await bus.ready()
    busReady = true
  } catch (err) {
    await bus.close()
    throw new StartupError(`Redis at ${whereOf(env.redisUrl ?? '', 6379)} (REDIS_URL) is unreachable: ${causeOf(connectError ?? err)}`, { cause: err })
  }
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
    if (err instanceof ServerSecretError || err instanceof StartupError) throw err
    const where = env.databaseUrl
      ? `PostgreSQL at ${whereOf(env.databaseUrl, 5432)} (DATABASE_URL)`
      : `the embedded database in ${env.dataDir ?? './data'} (GATEWAY_DATA_DIR)`
    throw new StartupError(`${where} cannot be opened: ${causeOf(err)}`, { cause: err })
  }
  const keyCache = new KeyCache({
    bus,
    clock,
    ...(env.unknownKeyTtlMs !== undefined ? { unknownTtlMs: env.unknownKeyTtlMs } : {}),
    ...(env.unknownKeyCacheMax !== undefined ? { unknownMax: env.unknownKeyCacheMax } : {})
  })
  // A key revoked or an account suspended by another process (the CLI, an instance without
  // Redis) reaches this cache within one poll.
  let changes: KeyChangeWatcher
  try {
    changes = await watchKeyChanges({
      feed: createKeyChangeFeed(store.backend),
      cache: keyCache,
      ...(env.keyChangePollMs !== undefined ? { intervalMs: env.keyChangePollMs } : {}),
      onError: (err) => process.emitWarning(`key cache: reading the store's key changes failed: ${err.message}`)
    })
  } catch (err) {
    keyCache.close()
    await store.close()
    await bus.close()
    throw err
  }
  const limitsUrl = env.limitsRedisUrl ?? env.redisUrl
  const limitsRedis = limitsUrl ? openLimitsRedis(limitsUrl, env.redisPrefix ?? 'gw:', env.limitsRedisTimeoutMs ?? 250) : undefined
  if (limitsRedis !== undefined) await firstAnswer(limitsRedis.client)
  const requestLog = new RequestLogWriter(store.requestLog, {
    ...(env.requestLogFlushMs !== undefined ? { flushIntervalMs: env.requestLogFlushMs } : {}),
    onError: (err, rows) => process.emitWarning(`request log: ${err.message} (${rows.length} rows)`)
  })
  return {
    store,
    keyCache,
    keyChanges: changes,
    requestLog,
    clock,
    ...(limitsRedis ? { limitsRedis } : {}),
    async close () {
      limitsRedis?.client.disconnect()
      await changes.stop()
      keyCache.close()
      await requestLog.close()
      await store.close()
      await bus.close()
    }
  }
}
