// Starts the real gateway (default gateway.yaml or a given file) in front of a mock upstream
// on port 0, for tests. Nothing here stands in for gateway code.
import type { FastifyInstance } from 'fastify'
import { loadConfig } from '../../plugins/config/index.js'
import type { GatewayConfig } from '../../plugins/config/types.js'
import { buildServer, type ServerOptions } from '../../plugins/gateway/server.js'
import { startMockUpstream, type MockUpstream } from '../fixtures/mock-upstream.js'

export interface TestGateway {
  url: string
  app: FastifyInstance
  mock: MockUpstream
  config: GatewayConfig
  close (): Promise<void>
}

export interface TestGatewayOptions {
  /** Config file; default the repository's gateway.yaml. */
  configFile?: string
  /** Extra environment for `${VAR}` expansion (provider URLs point at the mock unless given). */
  env?: Record<string, string>
  /** Reuse a running mock (several gateway instances on one upstream). */
  mock?: MockUpstream
  server?: Omit<Partial<ServerOptions>, 'config'>
}

export const REPO_CONFIG = new URL('../../gateway.yaml', import.meta.url).pathname

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

export async function startTestGateway (opts: TestGatewayOptions = {}): Promise<TestGateway> {
  const ownMock = opts.mock === undefined
  const mock = opts.mock ?? await startMockUpstream()
  const env = { ...process.env, ...mockEnv(mock.url), PORT: '0', HOST: '127.0.0.1', ...(opts.env ?? {}) }
  const { config } = loadConfig(opts.configFile ?? REPO_CONFIG, env)
  const app = await buildServer({ logger: false, ...(opts.server ?? {}), config })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const address = app.server.address()
  if (address === null || typeof address === 'string') throw new Error('gateway did not bind a TCP port')
  return {
    url: `http://127.0.0.1:${address.port}`,
    app,
    mock,
    config,
    async close () {
      await app.close()
      if (ownMock) await mock.close()
    }
  }
}
