// A gateway as `serve` runs it, in process: the reload host (plugins/apps/server/reload.ts) on a real
// store, the instance registry, and the admin listener with the config routes, in front of the
// mock upstream, reading its config from a file the test rewrites. Nothing here stands in for
// gateway code: the test calls the same admin route an operator does.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { FastifyInstance } from 'fastify'
import { stringify } from 'yaml'
import { buildAdminServer } from '../../plugins/apps/server/admin-server.js'
import { loadConfig } from '../../plugins/apps/gateway/config.js'
import { openServices, type GatewayServices } from '../../plugins/apps/gateway/index.js'
import { parseMoney } from '../../plugins/foundation/pricing/money.js'
import { startInstanceRegistry, type InstanceRegistry } from '../../plugins/apps/server/instances.js'
import { GatewayHost } from '../../plugins/apps/server/reload.js'
import { reloadAnswer } from '../../plugins/apps/server/serve-command.js'
import type { Account } from '../../plugins/foundation/store/types.js'
import { startMockUpstream, type MockUpstream } from '../fixtures/mock-upstream.js'
import { MOCK_CONTROL_HEADERS, mockEnv, UNREACHED_LIMIT, type Backend } from './gateway.js'
import { dropSchema, randomSchemaName, seedFundedKey, TEST_DATABASE_URL, TEST_SECRET } from './store.js'
import { readRepoConfig, writeTestConfig, type RawConfig } from './test-config.js'

export const ADMIN_TOKEN = 'reload-admin-token-0123456789-abcdefghij'

/** The repository's gateway.yaml as tests run it: the mock's headers allowed, limits out of reach, no job watcher. */
export function testRawConfig (edit: (config: RawConfig) => void = () => {}): RawConfig {
  const config = readRepoConfig()
  for (const provider of Object.values(config.providers)) {
    provider.allow_request_headers = [...new Set([...(provider.allow_request_headers ?? []), ...MOCK_CONTROL_HEADERS])]
  }
  const limits = config.limits as { tiers: Record<string, Record<string, unknown>> }
  for (const tier of Object.values(limits.tiers)) {
    tier.requests_per_minute = UNREACHED_LIMIT
    tier.concurrent_streams = UNREACHED_LIMIT
  }
  const jobs = config.jobs as { watcher: Record<string, unknown> }
  jobs.watcher.enabled = false
  edit(config)
  return config
}

export interface ReloadGateway {
  url: string
  adminUrl: string
  host: GatewayHost
  registry: InstanceRegistry
  services: GatewayServices
  mock: MockUpstream
  /** The config file the instance reloads from. */
  file: string
  env: Record<string, string>
  location: string
  account: Account
  key: string
  /** Writes the file again from the repository's config with `edit` applied (as testRawConfig). */
  write (edit?: (config: RawConfig) => void): void
  /** Writes raw text to the file. */
  writeText (text: string): void
  /** POST /admin/v1/config/reload */
  reload (): Promise<{ status: number, json: Record<string, unknown> }>
  admin (method: string, path: string): Promise<{ status: number, json: Record<string, unknown> }>
  close (): Promise<void>
}

export interface ReloadGatewayOptions {
  backend: Backend
  edit?: (config: RawConfig) => void
  mock?: MockUpstream
  /** Another instance's store (same PostgreSQL schema): no seed, its account and key. */
  shareWith?: ReloadGateway
  /** Environment over the mock's (`${VAR}` expansion at start and on every reload). */
  env?: Record<string, string>
  /** Where the instance's log lines go (JSON, one per line); default no log. */
  log?: { write: (line: string) => void }
}

export async function startReloadGateway (opts: ReloadGatewayOptions): Promise<ReloadGateway> {
  const ownMock = opts.mock === undefined
  const mock = opts.mock ?? await startMockUpstream()
  const written = writeTestConfig(() => {})
  const file = written.file
  const write = (edit?: (config: RawConfig) => void): void => { writeFileSync(file, stringify(testRawConfig(edit ?? opts.edit))) }
  write(opts.edit)
  const env: Record<string, string> = { ...process.env as Record<string, string>, ...mockEnv(mock.url), PORT: '0', HOST: '127.0.0.1', GATEWAY_ADMIN_PORT: '0', ...(opts.env ?? {}) }
  const loaded = loadConfig(file, env)
  const other = opts.shareWith
  const ownLocation = other === undefined
  const location = other?.location ?? (opts.backend === 'pg' ? randomSchemaName() : mkdtempSync(join(tmpdir(), 'gw-reload-')))
  const services = await openServices({
    secret: TEST_SECRET,
    defaultTier: loaded.config.limits.default_tier,
    ...(opts.backend === 'pg' ? { databaseUrl: TEST_DATABASE_URL, schema: location } : { dataDir: location })
  })
  // The registry writes the new hash as soon as a reload swapped (it starts after the host).
  const slot: { registry?: InstanceRegistry } = {}
  const logger = opts.log === undefined ? false : { level: 'info', stream: opts.log }
  const host = await GatewayHost.start({ file, loaded, services, env, logger, onSwap: async () => { await slot.registry?.beat() } })
  const instances = await startInstanceRegistry({ store: services.store, hash: () => host.hash, reloadedAt: () => host.reloadedAt, log: host.log })
  slot.registry = instances
  const admin: FastifyInstance = await buildAdminServer({
    config: loaded.config,
    currentConfig: () => host.config,
    store: services.store,
    token: ADMIN_TOKEN,
    logger: false,
    upstreamView: host.upstreamView,
    control: { reload: async () => reloadAnswer(await host.reload()), instances: async () => await instances.list() },
    readiness: () => host.app.gatewayReadiness
  })
  await admin.listen({ port: 0, host: '127.0.0.1' })
  await host.listen(0, '127.0.0.1')
  const address = host.server.address()
  const adminAddress = admin.server.address()
  if (address === null || typeof address === 'string' || adminAddress === null || typeof adminAddress === 'string') throw new Error('no TCP port')
  let account = other?.account
  let key = other?.key ?? ''
  if (account === undefined) {
    ({ account, key } = await seedFundedKey(services.store, { account: 'reload account', key: 'reload key' }, parseMoney('1000.00')))
  }
  const adminUrl = `http://127.0.0.1:${adminAddress.port}`
  const adminCall = async (method: string, path: string): Promise<{ status: number, json: Record<string, unknown> }> => {
    const res = await fetch(`${adminUrl}/admin/v1${path}`, { method, headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
    return { status: res.status, json: await res.json() as Record<string, unknown> }
  }
  return {
    url: `http://127.0.0.1:${address.port}`,
    adminUrl,
    host,
    registry: instances,
    services,
    mock,
    file,
    env,
    location,
    account,
    key,
    write,
    writeText: (text) => { writeFileSync(file, text) },
    reload: async () => await adminCall('POST', '/config/reload'),
    admin: adminCall,
    async close () {
      await host.close()
      await admin.close()
      await instances.stop()
      await services.close()
      written.remove()
      if (ownMock) await mock.close()
      if (ownLocation) {
        if (opts.backend === 'pg') await dropSchema(location)
        else rmSync(location, { recursive: true, force: true })
      }
    }
  }
}

/** Sets a model's token prices in a raw config (decimal strings per `per` tokens). */
export function setPrice (config: RawConfig, modelId: string, input: string, output: string): void {
  const model = config.models.find((m) => m.id === modelId)
  if (model === undefined) throw new Error(`no model ${modelId}`)
  model.pricing = { ...(model.pricing as object), input, output } as typeof model.pricing
}
