// Hostile client, admin API: guessing the token is throttled per client address (429
// LIMIT_RATE_EXCEEDED with Retry-After, the right token refused too until the window ends); a
// token shorter than the minimum stops the gateway at boot with one line and a non-zero exit;
// `serve` keeps /admin/v1 off the public listener and binds its own on 127.0.0.1.
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import t from 'tap'
import { AdminThrottle } from '../../plugins/apps/admin/index.js'
import { adminListenAddress } from '../../plugins/apps/server/admin-server.js'
import { loadConfig } from '../../plugins/apps/gateway/config.js'
import { buildServer } from '../../plugins/apps/server/server.js'
import { builtCli } from '../helpers/built-cli.js'
import { ManualClock, TEST_SECRET } from '../helpers/store.js'
import { REPO_CONFIG, startTestGateway, type Backend } from '../helpers/gateway.js'
import { ROOT } from '../helpers/paths.js'

const TOKEN = 'hostile-suite-admin-token-0123456789abcdef'
const BIN = builtCli()
const REPO = ROOT

t.test('AdminThrottle counts failures per address inside one window', async (t) => {
  const clock = new ManualClock()
  const throttle = new AdminThrottle({ maxFailures: 3, windowMs: 60_000, clock })
  for (let i = 0; i < 3; i++) {
    t.equal(throttle.retryAfterSeconds('10.0.0.1'), 0, `attempt ${i + 1} may try`)
    throttle.fail('10.0.0.1')
  }
  t.equal(throttle.retryAfterSeconds('10.0.0.1'), 60, 'blocked for the rest of the window')
  t.equal(throttle.retryAfterSeconds('10.0.0.2'), 0, 'another address is not')
  clock.advance(59_001)
  t.equal(throttle.retryAfterSeconds('10.0.0.1'), 1, 'Retry-After counts down, never 0 while blocked')
  clock.advance(999)
  t.equal(throttle.retryAfterSeconds('10.0.0.1'), 0, 'the window ended')
  throttle.fail('10.0.0.2')
  throttle.succeed('10.0.0.2')
  throttle.fail('10.0.0.2')
  throttle.fail('10.0.0.2')
  t.equal(throttle.retryAfterSeconds('10.0.0.2'), 0, 'a success clears the count')
})

for (const backend of ['sqlite', 'pg'] as Backend[]) {
  t.test(`admin throttle through a running gateway on ${backend}`, async (t) => {
    const clock = new ManualClock()
    const gw = await startTestGateway({ backend, services: { clock }, server: { adminToken: TOKEN } })
    t.teardown(() => gw.close())
    const { max_failures: max, failure_window_ms: windowMs } = gw.config.admin
    const call = async (token: string | null): Promise<Response> => await fetch(`${gw.url}/admin/v1/accounts`, {
      headers: token === null ? {} : { authorization: `Bearer ${token}` }
    })

    t.equal((await call(TOKEN)).status, 200, 'the right token works')
    for (let i = 1; i <= max; i++) {
      const res = await call(i % 2 === 0 ? null : `${TOKEN.slice(0, -1)}x`)
      t.equal(res.status, i % 2 === 0 ? 401 : 403, `failure ${i} of ${max} is answered as a refusal, not throttled`)
    }
    const throttled = await call(`wrong-${'x'.repeat(40)}`)
    t.equal(throttled.status, 429, `failure ${max + 1} is throttled`)
    t.equal(throttled.headers.get('x-gateway-error-code'), 'LIMIT_RATE_EXCEEDED')
    t.equal(throttled.headers.get('retry-after'), String(windowMs / 1000), 'Retry-After: the rest of the window')
    const body = await throttled.json() as { error?: { code?: string, retry?: { retry_after_seconds?: number } } }
    t.equal(body.error?.code, 'LIMIT_RATE_EXCEEDED', 'chat envelope')
    t.equal(body.error?.retry?.retry_after_seconds, windowMs / 1000)
    t.equal((await call(TOKEN)).status, 429, 'the right token is refused too while blocked: guesses tell nothing')

    clock.advance(windowMs)
    t.equal((await call(TOKEN)).status, 200, 'after the window the right token works again')
    t.equal((await call('nope-'.repeat(8))).status, 403, 'and failures count from zero')
  })
}

t.test('a short admin token is refused', async (t) => {
  const { config } = loadConfig(REPO_CONFIG, { PORT: '0', HOST: '127.0.0.1' })
  t.equal(config.admin.token_min_length, 32, 'default minimum')
  const gw = await startTestGateway({ seed: false })
  t.teardown(() => gw.close())
  await t.rejects(buildServer({ config, services: gw.services, logger: false, adminToken: 'x'.repeat(31) }), /at least 32 characters/, 'mounted mode refuses it too')

  const dir = mkdtempSync(join(tmpdir(), 'gw-admin-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const secretToken = 'short-token-of-31-characters-xx'
  const run = spawn(process.execPath, [BIN, 'serve', REPO_CONFIG], {
    cwd: REPO,
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', GATEWAY_DATA_DIR: dir, GATEWAY_SECRET: TEST_SECRET, GATEWAY_ADMIN_TOKEN: secretToken, GATEWAY_ADMIN_PORT: '0', DATABASE_URL: '', REDIS_URL: '' },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  let stderr = ''
  let stdout = ''
  run.stderr.on('data', (d: Buffer) => { stderr += d.toString() })
  run.stdout.on('data', (d: Buffer) => { stdout += d.toString() })
  const code = await new Promise<number | null>((resolve) => run.on('exit', (c) => resolve(c)))
  t.not(code, 0, 'serve exits non-zero')
  const lines = stderr.split('\n').filter((l) => l !== '' && !l.startsWith('npm warn'))
  t.equal(lines.length, 1, `one line: ${stderr}`)
  t.match(lines[0], /GATEWAY_ADMIN_TOKEN must be at least 32 characters \(got 31\)/)
  t.notOk(stderr.includes(secretToken) || stdout.includes(secretToken), 'the token itself is never printed')
  t.notOk(stdout.includes('model gateway ready'), 'nothing started')
})

t.test('serve: the admin API has its own listener on 127.0.0.1, not the public one', async (t) => {
  const { config } = loadConfig(REPO_CONFIG, {})
  t.same(adminListenAddress(config.admin, {}), { host: '127.0.0.1', port: 8081 }, 'default bind')
  t.same(adminListenAddress(config.admin, { GATEWAY_ADMIN_HOST: '::1', GATEWAY_ADMIN_PORT: '9000' }), { host: '::1', port: 9000 }, 'env overrides')

  const dir = mkdtempSync(join(tmpdir(), 'gw-admin-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const run = spawn(process.execPath, [BIN, 'serve', REPO_CONFIG], {
    cwd: REPO,
    // GATEWAY_ADMIN_HOST unset: the default of gateway.yaml decides the bind.
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', GATEWAY_DATA_DIR: dir, GATEWAY_SECRET: TEST_SECRET, GATEWAY_ADMIN_TOKEN: TOKEN, GATEWAY_ADMIN_HOST: '', GATEWAY_ADMIN_PORT: '0', DATABASE_URL: '', REDIS_URL: '', LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  const exited = new Promise<number | null>((resolve) => run.on('exit', (c) => resolve(c)))
  t.teardown(() => { if (run.exitCode === null) run.kill('SIGKILL') })
  let publicUrl: string | undefined
  let admin: { address?: string, port?: number } | undefined
  for await (const line of createInterface({ input: run.stdout })) {
    let entry: { msg?: string, admin?: { address?: string, port?: number } }
    try { entry = JSON.parse(line) as typeof entry } catch { continue }
    const listening = /^Server listening at (http:\/\/127\.0\.0\.1:\d+)$/.exec(entry.msg ?? '')
    if (listening && publicUrl === undefined) publicUrl = listening[1]
    if (entry.msg === 'admin API listening') admin = entry.admin
    if (entry.msg === 'model gateway ready') break
  }
  t.ok(publicUrl, 'public listener up')
  t.equal(admin?.address, '127.0.0.1', 'admin listener bound to loopback by default')
  const auth = { authorization: `Bearer ${TOKEN}` }
  const onPublic = await fetch(`${publicUrl}/admin/v1/accounts`, { headers: auth })
  t.equal(onPublic.status, 404, 'no admin API on the public listener')
  t.equal(onPublic.headers.get('x-gateway-error-code'), 'REQUEST_ROUTE_NOT_FOUND')
  const onAdmin = await fetch(`http://127.0.0.1:${admin?.port ?? 0}/admin/v1/accounts`, { headers: auth })
  t.equal(onAdmin.status, 200, 'the admin listener serves /admin/v1')
  const created = await fetch(`http://127.0.0.1:${admin?.port ?? 0}/admin/v1/accounts`, {
    method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'ops' })
  })
  t.equal(created.status, 201, 'and writes to the same store')
  run.kill('SIGTERM')
  t.equal(await exited, 0, 'both listeners close on SIGTERM')
})
