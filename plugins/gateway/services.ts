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
  close (): Promise<void>
}

export function serviceEnvFromProcess (env: NodeJS.ProcessEnv = process.env): ServiceEnv {
  return {
    databaseUrl: env.DATABASE_URL,
    redisUrl: env.REDIS_URL,
    dataDir: env.GATEWAY_DATA_DIR,
    secret: env.GATEWAY_SECRET,
    schema: env.DATABASE_SCHEMA
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
  const requestLog = new RequestLogWriter(store.requestLog, {
    onError: (err, rows) => process.emitWarning(`request log: ${err.message} (${rows.length} rows)`)
  })
  return {
    store,
    keyCache,
    requestLog,
    clock,
    async close () {
      keyCache.close()
      await requestLog.close()
      await store.close()
      await bus.close()
    }
  }
}
