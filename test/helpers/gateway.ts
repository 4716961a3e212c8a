// Starts the real gateway (default gateway.yaml or a given file) in front of a mock upstream
// on port 0, on a real store (temporary SQLite directory, or a private PostgreSQL schema),
// with one seeded account and key. Nothing here stands in for gateway code.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { FastifyInstance } from 'fastify'
import { loadConfig } from '../../plugins/apps/gateway/config.js'
import type { GatewayConfig, LimitsConfig } from '../../plugins/foundation/config/types.js'
import { buildServer, type ServerOptions } from '../../plugins/apps/server/server.js'
import { openServices, type GatewayServices, type ServiceEnv } from '../../plugins/apps/gateway/index.js'
import { dropSchema, randomSchemaName, seedFundedKey, TEST_DATABASE_URL, TEST_SECRET } from './store.js'
import type { Account } from '../../plugins/foundation/store/types.js'
import { parseMoney } from '../../plugins/foundation/pricing/money.js'
import { startMockUpstream, type MockUpstream } from '../fixtures/mock-upstream.js'
import { repoPath } from './paths.js'

export const TEST_REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379'

export interface TestGateway {
  url: string
  app: FastifyInstance
  mock: MockUpstream
  config: GatewayConfig
  services: GatewayServices
  /** The SQLite directory or PostgreSQL schema of the store (pass it as `location` to share it). */
  location: string
  account: Account
  /** Plaintext of the seeded key (no restrictions). */
  key: string
  /** `Authorization: Bearer <key>` */
  auth: Record<string, string>
  close (): Promise<void>
}

export type Backend = 'sqlite' | 'pg'

export interface TestGatewayOptions {
  /** Config file; default the repository's gateway.yaml. */
  configFile?: string
  /** Extra environment for `${VAR}` expansion (provider URLs point at the mock unless given). */
  env?: Record<string, string>
  /** Reuse a running mock (several gateway instances on one upstream). */
  mock?: MockUpstream
  /** Store backend (default sqlite in a temporary directory). */
  backend?: Backend
  /** Share a store location with another instance: the PostgreSQL schema or SQLite directory. */
  location?: string
  /** Redis invalidation bus on this channel (many-instance setup). */
  redisChannel?: string
  services?: Partial<ServiceEnv>
  server?: Omit<Partial<ServerOptions>, 'config' | 'services'>
  /** Seed an account and key (default true). */
  seed?: boolean
  /** Wallet top-up of the seeded account, a decimal string (default "1000.00"; "0" for none). */
  credit?: string
  /** Run on another test gateway's store (same backend and location) and use its key. */
  shareStoreWith?: TestGateway
  /**
   * Run the background job watcher as the config says (default false: it is switched off, since
   * its polls of a test's jobs would add upstream calls to tests that count them; job tests
   * drive a watcher by hand or ask for this one).
   */
  jobWatcher?: boolean
  /**
   * Add the mock upstream's `x-mock-*` control headers to every provider's request allow-list
   * (default true), so a test can steer the mock through the gateway. False: the config's lists as written.
   */
  mockControlHeaders?: boolean
  /**
   * The rate limits the gateway enforces. Default: the config's tiers, names and ranks, with
   * requests per minute and streams so high no test reaches them (tests send far more than the
   * default tier allows); 'config': as the config file says; an object: merged over the config's.
   */
  limits?: 'config' | Partial<LimitsConfig>
}

/** Far above what any test sends: the tiers keep their names and ranks and never refuse. */
export const UNREACHED_LIMIT = 10_000_000

/** The config's limits with every tier's rate and streams out of reach (see TestGatewayOptions.limits). */
export function withUnreachedLimits (limits: LimitsConfig): LimitsConfig {
  const tiers = Object.fromEntries(Object.entries(limits.tiers).map(([name, t]) => [name, { ...t, requests_per_minute: UNREACHED_LIMIT, concurrent_streams: UNREACHED_LIMIT }]))
  return { ...limits, tiers }
}

/** The request headers the mock upstream reads its behaviour from (fixtures/mock-upstream/behaviour.ts). */
export const MOCK_CONTROL_HEADERS = [
  'x-mock-status', 'x-mock-delay-ms', 'x-mock-hang', 'x-mock-chunks', 'x-mock-chunk-delay-ms',
  'x-mock-cut-after', 'x-mock-usage', 'x-mock-input-tokens', 'x-mock-job', 'x-mock-job-polls', 'x-mock-retry-after',
  'x-mock-tool-uses', 'x-mock-audio-seconds', 'x-mock-image-rendered', 'x-mock-cache-write'
]

/** The config with the mock's control headers allowed upstream (a copy; the loaded one is frozen). */
export function withMockControlHeaders (config: GatewayConfig): GatewayConfig {
  const providers = Object.fromEntries(Object.entries(config.providers).map(([name, p]) => [name, {
    ...p,
    allow_request_headers: [...new Set([...p.allow_request_headers, ...MOCK_CONTROL_HEADERS])]
  }]))
  return { ...config, providers }
}

export const REPO_CONFIG = repoPath('gateway.yaml')

export function mockEnv (mockUrl: string): Record<string, string> {
  return {
    OPENAI_BASE_URL: mockUrl,
    ANTHROPIC_BASE_URL: mockUrl,
    GENAI_BASE_URL: mockUrl,
    MUSIC_BASE_URL: mockUrl,
    OPENAI_API_KEY: 'upstream-openai-secret',
    ANTHROPIC_API_KEY: 'upstream-anthropic-secret',
    GENAI_API_KEY: 'upstream-genai-secret',
    MUSIC_API_KEY: 'upstream-music-secret'
  }
}

export { dropSchema }

export async function startTestGateway (options: TestGatewayOptions = {}): Promise<TestGateway> {
  const other = options.shareStoreWith
  const opts: TestGatewayOptions = other
    ? { ...options, backend: other.services.store.kind, location: other.location, seed: false }
    : options
  const ownMock = opts.mock === undefined
  const mock = opts.mock ?? await startMockUpstream()
  const env = { ...process.env, ...mockEnv(mock.url), PORT: '0', HOST: '127.0.0.1', ...(opts.env ?? {}) }
  const loaded = loadConfig(opts.configFile ?? REPO_CONFIG, env).config
  const watched: GatewayConfig = opts.jobWatcher === true
    ? loaded
    : { ...loaded, jobs: { ...loaded.jobs, watcher: { ...loaded.jobs.watcher, enabled: false } } }
  const limited: GatewayConfig = opts.limits === 'config'
    ? watched
    : { ...watched, limits: opts.limits === undefined ? withUnreachedLimits(watched.limits) : { ...watched.limits, ...opts.limits } }
  const config = opts.mockControlHeaders === false ? limited : withMockControlHeaders(limited)
  const backend = opts.backend ?? 'sqlite'
  const ownLocation = opts.location === undefined
  const location = opts.location ?? (backend === 'pg' ? randomSchemaName() : mkdtempSync(join(tmpdir(), 'gw-test-')))
  const services = await openServices({
    secret: TEST_SECRET,
    defaultTier: config.limits.default_tier,
    limitsRedisTimeoutMs: config.limits.redis_timeout_ms,
    unknownKeyTtlMs: config.auth.unknown_key_ttl_ms,
    unknownKeyCacheMax: config.auth.unknown_key_cache_max,
    ...(backend === 'pg' ? { databaseUrl: TEST_DATABASE_URL, schema: location } : { dataDir: location }),
    ...(opts.redisChannel ? { redisUrl: TEST_REDIS_URL, channel: opts.redisChannel, redisPrefix: `${opts.redisChannel}:` } : {}),
    ...(opts.services ?? {})
  })
  const app = await buildServer({ logger: false, ...(opts.server ?? {}), config, services })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const address = app.server.address()
  if (address === null || typeof address === 'string') throw new Error('gateway did not bind a TCP port')
  let account: Account | undefined
  let key = ''
  if (opts.seed !== false) {
    ({ account, key } = await seedFundedKey(services.store, { account: 'test account', key: 'test key' }, parseMoney(opts.credit ?? '1000.00')))
  }
  return {
    url: `http://127.0.0.1:${address.port}`,
    app,
    mock,
    config,
    services,
    location,
    account: other?.account ?? account as Account,
    key: other?.key ?? key,
    auth: { authorization: `Bearer ${other?.key ?? key}` },
    async close () {
      await app.close()
      await services.close()
      if (ownMock) await mock.close()
      if (ownLocation) {
        if (backend === 'pg') await dropSchema(location)
        else rmSync(location, { recursive: true, force: true })
      }
    }
  }
}
