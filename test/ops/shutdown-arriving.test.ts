// Nothing lost at shutdown, through the real CLI (`node dist/bin/model-gateway.js serve`): slow
// streams are in flight and new requests keep arriving when SIGTERM comes. The process stops
// accepting, lets the streams finish (up to server.shutdown_grace_ms), settles every hold,
// flushes the request log, then exits 0: every answered request has its row, no hold is left
// open, the balance is the credit minus the rows' costs, and no "row not stored" is reported.
// On both stores.
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { Agent, request } from 'undici'
import YAML from 'yaml'
import { openStore } from '../../plugins/foundation/store/index.js'
import { parseMoney } from '../../plugins/foundation/pricing/money.js'
import { startMockUpstream } from '../fixtures/mock-upstream.js'
import { checkWalletAgainstRows, storeRows } from '../helpers/billing.js'
import { freePort } from '../helpers/free-port.js'
import { MOCK_CONTROL_HEADERS, mockEnv } from '../helpers/gateway.js'
import { dropSchema, randomSchemaName, seedFundedKey, TEST_DATABASE_URL, TEST_SECRET } from '../helpers/store.js'
import { builtCli } from '../helpers/built-cli.js'
import { ROOT } from '../helpers/paths.js'

const CLI = builtCli()

/** gateway.yaml with the mock's control headers allowed upstream and limits out of reach (a copy in `dir`). */
function configWithMockHeaders (dir: string, graceMs?: number): string {
  const doc = YAML.parseDocument(readFileSync(join(ROOT, 'gateway.yaml'), 'utf8'))
  // Included files are named relative to the config: point them at the repository's.
  const include = doc.get('include') as YAML.YAMLSeq | undefined
  if (include) include.items = include.items.map((item) => doc.createNode(join(ROOT, String((item as YAML.Scalar).value))))
  const providers = doc.get('providers') as YAML.YAMLMap
  for (const item of providers.items) {
    const provider = item.value as YAML.YAMLMap
    const allowed = provider.get('allow_request_headers') as YAML.YAMLSeq
    for (const h of MOCK_CONTROL_HEADERS) allowed.add(h)
  }
  // The test's 40 streams are far past the default tier's 4 concurrent streams: every tier is
  // lifted out of reach (rate limits are not what this test is about).
  const tiers = doc.getIn(['limits', 'tiers']) as YAML.YAMLMap
  for (const item of tiers.items) {
    const tier = item.value as YAML.YAMLMap
    tier.set('requests_per_minute', 10_000_000)
    tier.set('concurrent_streams', 10_000_000)
  }
  if (graceMs !== undefined) doc.setIn(['server', 'shutdown_grace_ms'], graceMs)
  const file = join(dir, 'gateway.yaml')
  writeFileSync(file, doc.toString())
  return file
}

async function waitForLine (child: ChildProcess, pattern: RegExp, output: { text: string }): Promise<string> {
  return await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no ${String(pattern)} in ${output.text}`)), 30_000)
    const look = (): void => {
      const m = pattern.exec(output.text)
      if (m) { clearTimeout(timer); resolve(m[1] ?? m[0]) }
    }
    child.stdout?.on('data', look)
    child.stderr?.on('data', look)
    look()
  })
}

/**
 * `graceMs`: the shutdown grace; streams of `chunks` chunks 100 ms apart that outlast it are
 * cut when it ends, and must still be settled and logged.
 */
async function shutdownWithArrivals (t: Test, backend: 'sqlite' | 'pg', { graceMs, chunks = 10 }: { graceMs?: number, chunks?: number } = {}): Promise<void> {
  const STREAMS = 40
  const mock = await startMockUpstream()
  const dir = mkdtempSync(join(tmpdir(), 'gw-shutdown-'))
  const schema = randomSchemaName()
  t.teardown(async () => {
    await mock.close()
    rmSync(dir, { recursive: true, force: true })
    if (backend === 'pg') await dropSchema(schema)
  })
  const storeEnv = backend === 'pg' ? { databaseUrl: TEST_DATABASE_URL, schema } : { dataDir: join(dir, 'data') }
  // Seed an account and key on the store the CLI will open.
  const seed = await openStore({ secret: TEST_SECRET, ...storeEnv })
  const { account, key } = await seedFundedKey(seed, { account: 'shutdown', key: 'k' }, parseMoney('100.00'))
  await seed.close()

  const publicPort = await freePort()
  const output = { text: '' }
  const child = spawn(process.execPath, [CLI, 'serve', configWithMockHeaders(dir, graceMs)], {
    env: {
      PATH: process.env.PATH ?? '',
      ...mockEnv(mock.url),
      PORT: String(publicPort),
      GATEWAY_ADMIN_PORT: '0',
      HOST: '127.0.0.1',
      GATEWAY_SECRET: TEST_SECRET,
      LOG_LEVEL: 'info',
      ...(backend === 'pg' ? { DATABASE_URL: TEST_DATABASE_URL, DATABASE_SCHEMA: schema } : { GATEWAY_DATA_DIR: join(dir, 'data') })
    },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  child.stdout?.on('data', (c: Buffer) => { output.text += c.toString() })
  child.stderr?.on('data', (c: Buffer) => { output.text += c.toString() })
  const exited = new Promise<number | null>((resolve) => child.on('exit', resolve))
  t.teardown(() => { if (child.exitCode === null) child.kill('SIGKILL') })
  await waitForLine(child, /model gateway ready/, output)
  const url = `http://127.0.0.1:${publicPort}`
  const agent = new Agent({ connections: 200 })
  t.teardown(() => agent.close())
  const headers = { 'content-type': 'application/json', authorization: `Bearer ${key}` }

  interface Sent { status: number, requestId: string | null, complete: boolean, error?: string }
  /**
   * One chat request. The request id is kept from the headers: a stream cut by the end of the
   * grace has no body end, but its row must exist all the same.
   */
  const send = async (stream: boolean, extra: Record<string, string>): Promise<Sent> => {
    try {
      const res = await request(`${url}/v1/chat/completions`, {
        method: 'POST',
        dispatcher: agent,
        headers: { ...headers, ...extra },
        body: JSON.stringify({ model: 'openai/gpt-4o-mini', stream, messages: [{ role: 'user', content: 'arriving' }] })
      })
      const requestId = typeof res.headers['x-request-id'] === 'string' ? res.headers['x-request-id'] : null
      try {
        const text = await res.body.text()
        return { status: res.statusCode, requestId, complete: stream ? text.includes('[DONE]') : text.includes('"choices"') }
      } catch (err) {
        return { status: res.statusCode, requestId, complete: false, error: (err as Error).message }
      }
    } catch (err) {
      return { status: 0, requestId: null, complete: false, error: (err as Error).message }
    }
  }

  const probe = await send(false, {})
  t.equal(probe.status, 200, `the gateway answers before the shutdown: ${JSON.stringify(probe)} ${output.text.slice(-2000)}`)
  // Slow streams: `chunks` chunks 100 ms apart.
  const streams = Array.from({ length: STREAMS }, async () => await send(true, { 'x-mock-chunks': String(chunks), 'x-mock-chunk-delay-ms': '100' }))
  await mock.waitForCalls(STREAMS, 30_000)
  child.kill('SIGTERM')
  // New requests keep arriving while the gateway shuts down, until it is gone.
  const arrivals: Array<Promise<Sent>> = []
  const state = { stopped: false }
  exited.then(() => { state.stopped = true }, () => { state.stopped = true })
  while (!state.stopped) {
    arrivals.push(send(false, {}), send(true, { 'x-mock-chunks': '3', 'x-mock-chunk-delay-ms': '20' }))
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
  const code = await exited
  const streamed = await Promise.all(streams)
  const arrived = await Promise.all(arrivals)
  t.equal(code, 0, 'the gateway exits 0 after a graceful shutdown')
  if (graceMs === undefined) {
    t.equal(streamed.filter((s) => s.status === 200 && s.complete).length, STREAMS, 'every stream in flight finished in full')
  } else {
    t.equal(streamed.filter((s) => s.requestId !== null).length, STREAMS, 'every stream had started')
    t.equal(streamed.filter((s) => s.complete).length, 0, 'the grace cut every stream')
  }
  t.ok(arrived.length > 2, `${arrived.length} requests arrived during the shutdown`)
  const answered = [...streamed, ...arrived].filter((s) => s.status === 200 && s.requestId !== null)
  const refusedNew = arrived.filter((s) => s.status !== 200)
  t.comment(`${backend}: ${arrived.length} arrivals: ${arrived.length - refusedNew.length} answered, ${refusedNew.filter((s) => s.status === 503).length} got 503, ${refusedNew.filter((s) => s.status === 0).length} found no listener`)
  t.notMatch(output.text, /row not stored|request log:/, `no request log row was dropped: ${output.text.split('\n').filter((l) => !l.includes('"msg":"request"')).join('\n').slice(0, 3000)}`)
  t.notMatch(output.text, /^\s+at /m, 'no stack trace')

  const store = await openStore({ secret: TEST_SECRET, ...storeEnv })
  try {
    const rows = await storeRows(store, account.id)
    const ids = new Set(rows.map((r) => r.requestId))
    const missing = answered.filter((s) => s.requestId === null || !ids.has(s.requestId))
    t.equal(missing.length, 0, `every answered request (${answered.length}) has its row`)
    await checkWalletAgainstRows(t, store, account.id, rows, parseMoney('100.00'))
  } finally {
    await store.close()
  }
}

t.test('shutdown with requests still arriving loses no row: SQLite', async (t) => { await shutdownWithArrivals(t, 'sqlite') })
t.test('shutdown with requests still arriving loses no row: PostgreSQL', async (t) => { await shutdownWithArrivals(t, 'pg') })
t.test('streams that outlast the grace are cut, and still settled and logged: SQLite', async (t) => { await shutdownWithArrivals(t, 'sqlite', { graceMs: 500, chunks: 30 }) })
t.test('streams that outlast the grace are cut, and still settled and logged: PostgreSQL', async (t) => { await shutdownWithArrivals(t, 'pg', { graceMs: 500, chunks: 30 }) })
