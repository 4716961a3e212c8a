// `model-gateway accounts` and `model-gateway keys` as an operator runs them: the real CLI
// in a child process, on embedded SQLite (GATEWAY_DATA_DIR) and on PostgreSQL
// (DATABASE_URL + DATABASE_SCHEMA), its JSON output parsed. Each spawn costs most of a
// second, so the many refusal and usage cases run the same command functions in-process.
import { spawn } from 'node:child_process'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { KEY_INVALIDATION_CHANNEL } from '../plugins/apps/admin/index.js'
import { accountsCommand, keysCommand } from '../plugins/apps/admin/cli.js'
import type { CommandIo } from '../plugins/apps/admin/cli-runtime.js'
import { type InvalidationMessage, RedisInvalidationBus, lookupHash } from '../plugins/foundation/keys/index.js'
import { builtCli } from './helpers/built-cli.js'
import { TEST_DATABASE_URL, TEST_SECRET, type TestBackend, pgTestBackend, sqliteTestBackend } from './helpers/store.js'
import { ROOT } from './helpers/paths.js'

// CLI processes on both stores: the built CLI (dist/, as `npm start` runs it; built by `npm test`),
// which starts in about half the time tsx needed (47 s for this file on a quiet machine with tsx,
// 80 s on a loaded one). The file keeps room; no single command waits on anything unbounded.
t.setTimeout(300_000)

const root = ROOT
const BIN = builtCli()
const CONFIG = join(root, 'gateway.yaml')
const REDIS_URL = process.env['TEST_REDIS_URL'] ?? 'redis://127.0.0.1:6379'
const LEGACY = 'gw_live_cli0123456789abcdef'

interface Run {
  code: number | null
  stdout: string
  stderr: string
  /** stdout parsed as JSON (or stderr when the command failed). */
  json: any
}

function runCli (args: string[], env: Record<string, string>, input?: string): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      cwd: root,
      // Only what the test gives: no DATABASE_URL or REDIS_URL leaks in from the caller.
      env: { PATH: process.env['PATH'] ?? '', GATEWAY_CONFIG: CONFIG, GATEWAY_SECRET: TEST_SECRET, ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d: Buffer) => { stdout += d.toString() })
    child.stderr.on('data', (d: Buffer) => { stderr += d.toString() })
    child.on('error', reject)
    child.on('close', (code) => {
      let json: unknown = null
      try { json = JSON.parse(code === 0 ? stdout : stderr) } catch { /* asserted by the caller */ }
      resolve({ code, stdout, stderr, json })
    })
    child.stdin.end(input ?? '')
  })
}

/** The same command functions in this process, with their environment and output captured. */
async function inProcess (args: string[], env: Record<string, string>): Promise<Run> {
  let stdout = ''
  let stderr = ''
  const io: CommandIo = {
    env: { GATEWAY_CONFIG: CONFIG, GATEWAY_SECRET: TEST_SECRET, ...env },
    stdout: { write: (text: string) => { stdout += text } },
    stderr: { write: (text: string) => { stderr += text } },
  }
  const [group, ...rest] = args
  const code = await (group === 'keys' ? keysCommand : accountsCommand)(rest, io)
  let json: unknown = null
  try { json = JSON.parse(code === 0 ? stdout : stderr) } catch { /* asserted by the caller */ }
  return { code, stdout, stderr, json }
}

function backendEnv (backend: TestBackend): Record<string, string> {
  return backend.name === 'sqlite'
    ? { GATEWAY_DATA_DIR: backend.location }
    : { DATABASE_URL: TEST_DATABASE_URL, DATABASE_SCHEMA: backend.location }
}

type Tap = Test

function expectOk (t: Tap, r: Run, what: string): any {
  t.equal(r.code, 0, `${what} exits 0 ${r.stderr}`)
  t.equal(r.stderr, '', `${what}: nothing on stderr`)
  t.ok(r.json, `${what} prints JSON`)
  return r.json
}

function expectFailure (t: Tap, r: Run, what: string, code: string, param?: string): void {
  t.equal(r.code, 1, `${what} exits 1`)
  t.equal(r.stdout, '', `${what}: nothing on stdout`)
  t.equal(r.json?.error?.code, code, `${what} answers ${code}`)
  t.type(r.json?.error?.message, 'string')
  if (param !== undefined) t.equal(r.json?.error?.param, param, `param ${param}`)
}

for (const backend of [sqliteTestBackend(), pgTestBackend()]) {
  t.test(`CLI on ${backend.name}`, async (t) => {
    t.teardown(() => backend.cleanup())
    const env = backendEnv(backend)

    t.test('the real CLI: a whole account and key lifecycle', async (t) => {
      const spawned = async (args: string[], input?: string): Promise<any> =>
        expectOk(t, await runCli(args, env, input), args.slice(0, 2).join(' '))
      const account = await spawned(['accounts', 'create', '--name', 'Acme', '--json'])
      t.match(account, { id: /^acct_/, name: 'Acme', status: 'active', tier: 'free', topped_up: false })
      // The CLI wrote where the server reads: the same data directory, or the same PostgreSQL schema.
      const store = await backend.open()
      t.equal((await store.accounts.get(account.id))?.name, 'Acme')
      t.same((await spawned(['accounts', 'list'])).data, [account])
      t.equal((await spawned(['accounts', 'set-tier', account.id, 'standard'])).tier, 'standard')

      const created = await spawned([
        'keys', 'create', '--account', account.id, '--name', 'ci', '--models', 'openai/gpt-4o,openai/gpt-4o-mini',
        '--expires', '2099-01-01T00:00:00Z', '--timezone', 'Asia/Tokyo', '--quota', '25', '--daily-cap', '1.5',
        '--monthly-cap', '10', '--daily-image-cap', '5', '--tags', 'team:ml,ci', '--policy', 'standard',
      ])
      t.match(created, {
        id: /^key_/,
        account_id: account.id,
        name: 'ci',
        key: /^sk-/,
        allowed_models: ['openai/gpt-4o', 'openai/gpt-4o-mini'],
        expires_at: '2099-01-01T00:00:00.000Z',
        timezone: 'Asia/Tokyo',
        quota: '25.00',
        daily_spend_cap: '1.50',
        monthly_spend_cap: '10.00',
        daily_image_cap: 5,
        tags: ['team:ml', 'ci'],
        rate_limit_policy: 'standard',
        active: true,
      })
      t.equal((await store.keys.findByLookupHash(lookupHash(TEST_SECRET, created.key)))?.id, created.id, 'the key authenticates')

      const listed = await runCli(['keys', 'list', '--account', account.id], env)
      t.same(expectOk(t, listed, 'keys list').data.map((k: { id: string }) => k.id), [created.id])
      t.notOk(listed.stdout.includes(created.key), 'list never prints the plaintext')
      const updated = await spawned(['keys', 'update', created.id, '--name', 'ci-2', '--active', 'false', '--models', 'none', '--tags', ''])
      t.match(updated, { name: 'ci-2', active: false, status: 'inactive', allowed_models: null, tags: [], quota: '25.00' })
      t.notOk('key' in updated)
      t.equal((await spawned(['keys', 'reveal', created.id])).key, created.key)
      t.match(await spawned(['keys', 'revoke', created.id]), { revoked: true, status: 'revoked' })
      expectFailure(t, await runCli(['keys', 'reveal', created.id], env), 'reveal after revoke', 'AUTH_API_KEY_REVOKED', 'key_id')

      // `--key -` keeps the legacy key out of the process list.
      const legacy = await spawned(['keys', 'import-legacy', '--account', account.id, '--key', '-', '--name', 'old'], `${LEGACY}\n`)
      t.match(legacy, { legacy: true, name: 'old', prefix: LEGACY.slice(0, 8) })
      t.notOk('key' in legacy)
      t.equal((await store.keys.findByLookupHash(lookupHash(TEST_SECRET, LEGACY)))?.id, legacy.id)
      expectFailure(t, await runCli(['keys', 'reveal', legacy.id], env), 'reveal legacy', 'AUTH_API_KEY_NOT_REVEALABLE', 'key_id')
    })

    t.test('every command and refusal, in-process', async (t) => {
      const local = async (args: string[]): Promise<any> => expectOk(t, await inProcess(args, env), args.slice(0, 2).join(' '))
      const refused = async (args: string[], code: string, param?: string): Promise<void> =>
        expectFailure(t, await inProcess(args, env), args.slice(0, 2).join(' '), code, param)
      const account = await local(['accounts', 'create', '--name', 'Beta'])
      const big = await local(['accounts', 'create', '--name', 'Big', '--tier', 'enterprise'])
      t.equal(big.tier, 'enterprise')
      const page = await local(['accounts', 'list', '--limit', '1'])
      t.equal(page.data.length, 1)
      t.equal(page.has_more, true)
      const rest = await local(['accounts', 'list', '--after', page.next_after])
      t.notOk(rest.data.some((a: { id: string }) => a.id === page.data[0].id))
      t.same(await local(['accounts', 'get', account.id]), account)
      t.equal((await local(['accounts', 'suspend', account.id])).status, 'suspended')
      t.equal((await local(['accounts', 'reactivate', account.id])).status, 'active')
      await refused(['accounts', 'set-tier', account.id, 'platinum'], 'REQUEST_INVALID', 'tier')
      await refused(['accounts', 'create', '--name', ' '], 'REQUEST_INVALID', 'name')
      await refused(['accounts', 'get', 'acct_missing'], 'REQUEST_ROUTE_NOT_FOUND', 'account_id')
      await refused(['accounts', 'list', '--limit', '0'], 'REQUEST_INVALID', 'limit')

      const key = await local(['keys', 'create', '--account', account.id, '--name', 'k', '--active', 'false'])
      t.equal(key.active, false)
      t.equal((await local(['keys', 'get', key.id])).name, 'k')
      t.match(await local(['keys', 'update', key.id, '--quota', '3.25', '--daily-image-cap', '7', '--active', 'true']), { quota: '3.25', daily_image_cap: 7, active: true })
      t.match(await local(['keys', 'update', key.id, '--quota', 'none', '--daily-image-cap', 'none', '--expires', 'none', '--policy', 'none']), { quota: null, daily_image_cap: null, expires_at: null, rate_limit_policy: null })
      await refused(['keys', 'create', '--account', 'acct_missing', '--name', 'x'], 'REQUEST_ROUTE_NOT_FOUND', 'account_id')
      await refused(['keys', 'create', '--account', account.id, '--name', 'x', '--policy', 'standard'], 'LIMIT_API_KEY_POLICY_NOT_ALLOWED', 'rate_limit_policy')
      await refused(['keys', 'create', '--account', account.id, '--name', 'x', '--expires', '2020-01-01T00:00:00Z'], 'AUTH_API_KEY_CONFIGURATION_INVALID', 'expires_at')
      await refused(['keys', 'create', '--account', account.id, '--name', 'x', '--models', 'nobody/none'], 'AUTH_API_KEY_CONFIGURATION_INVALID', 'allowed_models')
      await refused(['keys', 'create', '--account', account.id, '--name', 'x', '--timezone', 'Nowhere/City'], 'AUTH_API_KEY_CONFIGURATION_INVALID', 'timezone')
      await refused(['keys', 'create', '--account', account.id, '--name', 'x', '--quota=-1'], 'AUTH_API_KEY_CONFIGURATION_INVALID', 'quota')
      await refused(['keys', 'create', '--account', account.id, '--name', 'x', '--active', 'maybe'], 'AUTH_API_KEY_CONFIGURATION_INVALID', 'active')
      await refused(['keys', 'update', key.id, '--daily-image-cap=-1'], 'AUTH_API_KEY_CONFIGURATION_INVALID', 'daily_image_cap')
      await refused(['keys', 'update', key.id, '--tags', Array.from({ length: 21 }, (_, i) => `t${i}`).join(',')], 'AUTH_API_KEY_CONFIGURATION_INVALID', 'tags')
      await refused(['keys', 'get', 'key_missing'], 'AUTH_API_KEY_NOT_FOUND', 'key_id')
      await refused(['keys', 'revoke', 'key_missing'], 'AUTH_API_KEY_NOT_FOUND', 'key_id')
      t.match(await local(['keys', 'revoke', key.id]), { revoked: true })
      await refused(['keys', 'update', key.id, '--name', 'again'], 'AUTH_API_KEY_REVOKED', 'key_id')
      const legacy = 'gw_live_inprocess0123456789'
      await local(['keys', 'import-legacy', '--account', account.id, '--key', legacy, '--name', 'old'])
      await refused(['keys', 'import-legacy', '--account', account.id, '--key', legacy, '--name', 'dup'], 'AUTH_API_KEY_CONFIGURATION_INVALID', 'key')
      await refused(['keys', 'import-legacy', '--account', account.id, '--key', 'sk-not-legacy', '--name', 'x'], 'AUTH_API_KEY_CONFIGURATION_INVALID', 'key')
    })
  })
}

t.test('CLI usage errors exit 2 with a JSON error; help prints usage', async (t) => {
  const backend = sqliteTestBackend()
  t.teardown(() => backend.cleanup())
  const env = backendEnv(backend)
  const isUsage = (r: Run, pattern: RegExp): void => {
    t.equal(r.code, 2, `exits 2: ${r.stderr.slice(0, 120)}`)
    t.equal(r.stdout, '')
    t.equal(r.json?.error?.code, 'USAGE')
    t.match(r.json?.error?.message, pattern)
    t.match(r.json?.error?.usage, /^usage: model-gateway /)
  }
  isUsage(await runCli(['accounts', 'create'], env), /--name is required/)
  isUsage(await inProcess(['accounts'], env), /missing action/)
  isUsage(await inProcess(['accounts', 'delete', 'x'], env), /unknown action "delete"/)
  isUsage(await inProcess(['accounts', 'create', '--name', 'x', '--colour', 'red'], env), /Unknown option '--colour'/)
  isUsage(await inProcess(['accounts', 'create', '--name'], env), /argument missing/)
  isUsage(await inProcess(['accounts', 'get'], env), /expected ID/)
  isUsage(await inProcess(['accounts', 'get', 'a', 'b'], env), /expected ID/)
  isUsage(await inProcess(['accounts', 'set-tier', 'acct_x'], env), /expected ID TIER/)
  isUsage(await inProcess(['keys', 'create', '--name', 'x'], env), /--account is required/)
  isUsage(await inProcess(['keys', 'create', '--account', 'a'], env), /--name is required/)
  isUsage(await inProcess(['keys', 'list'], env), /--account is required/)
  isUsage(await inProcess(['keys', 'update', 'key_x'], env), /at least one setting/)
  isUsage(await inProcess(['keys', 'import-legacy', '--account', 'a', '--name', 'x'], env), /--key is required/)
  const help = await inProcess(['keys', 'help'], env)
  t.equal(help.code, 0)
  t.match(help.stdout, /keys create --account ID --name N/)
  const top = await runCli(['help'], env)
  t.equal(top.code, 0)
  t.match(top.stdout, /accounts create --name N/)
  t.match(top.stdout, /keys import-legacy/)
})

t.test('CLI environment problems are JSON errors that exit 1', async (t) => {
  const backend = sqliteTestBackend()
  t.teardown(() => backend.cleanup())
  const badConfig = await inProcess(['accounts', 'list'], { ...backendEnv(backend), GATEWAY_CONFIG: join(root, 'no-such.yaml') })
  expectFailure(t, badConfig, 'missing config', 'CONFIG_INVALID')
  t.ok(Array.isArray(badConfig.json?.error?.problems))
  const noSecret = await inProcess(['accounts', 'list'], { DATABASE_URL: TEST_DATABASE_URL, GATEWAY_SECRET: '' })
  expectFailure(t, noSecret, 'PostgreSQL without a secret', 'STORE_UNAVAILABLE')
  t.match(noSecret.json?.error?.message, /GATEWAY_SECRET is required/)
  const schemaWithoutPg = await inProcess(['accounts', 'list'], { ...backendEnv(backend), DATABASE_SCHEMA: 'x' })
  expectFailure(t, schemaWithoutPg, 'DATABASE_SCHEMA without DATABASE_URL', 'STORE_UNAVAILABLE')
})

t.test('the real CLI tells running instances over Redis what changed', async (t) => {
  const backend = sqliteTestBackend()
  const bus = new RedisInvalidationBus(REDIS_URL, KEY_INVALIDATION_CHANNEL)
  t.teardown(async () => {
    await bus.close()
    await backend.cleanup()
  })
  await bus.ready()
  const seen: InvalidationMessage[] = []
  bus.subscribe((m) => seen.push(m))
  const env = { ...backendEnv(backend), REDIS_URL }
  const account = (await inProcess(['accounts', 'create', '--name', 'r'], env)).json
  const key = (await inProcess(['keys', 'create', '--account', account.id, '--name', 'k'], env)).json
  expectOk(t, await runCli(['keys', 'revoke', key.id], env), 'keys revoke')
  expectOk(t, await runCli(['accounts', 'suspend', account.id], env), 'accounts suspend')
  // Pub/sub delivery is asynchronous: wait a little for the three messages (the key's creation
  // clears negative key-cache entries, then its revoke, then the suspension).
  const mine = (): InvalidationMessage[] => seen.filter((m) => m.kind !== 'all' && (m.id === key.id || m.id === account.id))
  for (let i = 0; i < 100 && mine().length < 3; i++) await new Promise((resolve) => setTimeout(resolve, 20))
  t.same(mine(), [{ kind: 'key', id: key.id }, { kind: 'key', id: key.id }, { kind: 'account', id: account.id }])
})
