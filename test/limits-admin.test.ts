// The tiers as an operator reads them: GET /admin/v1/tiers and `model-gateway tiers list`.
import t from 'tap'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { tiersCommand } from '../plugins/apps/admin/cli.js'
import type { CommandIo } from '../plugins/apps/admin/cli-runtime.js'
import { adminClient } from './helpers/billing.js'
import { REPO_CONFIG, startTestGateway } from './helpers/gateway.js'
import { TEST_SECRET } from './helpers/store.js'

const TOKEN = 'limits-admin-token-0123456789abcdef0123'
// gateway.yaml's tiers, lowest rank first.
const TIERS = [
  { name: 'free', rank: 0, requests_per_minute: 60, concurrent_streams: 4 },
  { name: 'standard', rank: 1, requests_per_minute: 600, concurrent_streams: 32 },
  { name: 'enterprise', rank: 2, requests_per_minute: 6000, concurrent_streams: 256 }
]

t.test('GET /admin/v1/tiers lists the configured tiers, lowest rank first', async (t) => {
  const gw = await startTestGateway({ limits: 'config', server: { adminToken: TOKEN } })
  t.teardown(() => gw.close())
  const call = adminClient(gw, TOKEN)
  const res = await call('GET', '/tiers')
  t.equal(res.status, 200)
  t.strictSame(res.json, { data: TIERS }, 'name, rank, requests_per_minute, concurrent_streams per tier')
  const denied = await adminClient(gw, 'wrong-token-0123456789abcdef0123456789')('GET', '/tiers')
  t.equal(denied.status, 403, 'the admin token is required')
})

t.test('model-gateway tiers list prints the same', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'gw-tiers-'))
  t.teardown(() => { rmSync(dir, { recursive: true, force: true }) })
  let stdout = ''
  let stderr = ''
  const io: CommandIo = {
    env: { GATEWAY_CONFIG: REPO_CONFIG, GATEWAY_SECRET: TEST_SECRET, GATEWAY_DATA_DIR: dir },
    stdout: { write: (text: string) => { stdout += text } },
    stderr: { write: (text: string) => { stderr += text } }
  }
  const code = await tiersCommand(['list'], io)
  t.equal(code, 0, stderr)
  t.strictSame(JSON.parse(stdout), { data: TIERS })
  const bad = await tiersCommand(['list', 'extra'], { ...io, stdout: { write: () => {} }, stderr: { write: () => {} } })
  t.not(bad, 0, 'an unexpected argument is a usage error')
})

t.test('model-gateway check refuses a lease renewal period not below the lease TTL', async (t) => {
  const { loadConfig } = await import('../plugins/apps/gateway/config.js')
  const { crossCheck } = await import('../plugins/foundation/config/cross-check.js')
  const { config } = loadConfig(REPO_CONFIG, {})
  t.same(crossCheck(config).filter((p) => p.path[0] === 'limits'), [], 'the repository config passes')
  const bad = { ...config, limits: { ...config.limits, stream_lease_ttl_ms: 5000, stream_lease_renew_ms: 5000 } }
  const problems = crossCheck(bad).filter((p) => p.path[0] === 'limits')
  t.equal(problems.length, 1, 'one problem')
  t.same(problems[0]?.path, ['limits', 'stream_lease_renew_ms'], 'named at limits.stream_lease_renew_ms')
})
