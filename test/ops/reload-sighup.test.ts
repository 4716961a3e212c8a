// Hot reload through the real CLI (`node dist/bin/model-gateway.js serve`), on both stores:
// SIGHUP reads gateway.yaml again. A price change is in force for the next request (/readyz and
// GET /admin/v1/instances show the new hash); a bad file is refused with the `check` report on
// the log, /readyz shows the refusal and the old config keeps serving; SIGTERM still exits 0.
import { spawn } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { OpenAI } from 'openai'
import { stringify } from 'yaml'
import { formatProblem } from '../../plugins/foundation/config/index.js'
import { checkConfig, loadConfig } from '../../plugins/apps/gateway/config.js'
import { parseMoney } from '../../plugins/foundation/pricing/money.js'
import { openStore } from '../../plugins/foundation/store/index.js'
import { startMockUpstream } from '../fixtures/mock-upstream.js'
import { expectedCost, priceOf, storeRows } from '../helpers/billing.js'
import { freePort } from '../helpers/free-port.js'
import { mockEnv, type Backend } from '../helpers/gateway.js'
import { ADMIN_TOKEN, setPrice, testRawConfig } from '../helpers/reload.js'
import { dropSchema, randomSchemaName, seedFundedKey, TEST_DATABASE_URL, TEST_SECRET } from '../helpers/store.js'
import { writeTestConfig } from '../helpers/test-config.js'
import { builtCli } from '../helpers/built-cli.js'

const CLI = builtCli()
const MODEL = 'openai/gpt-4o-mini'

interface LogLine { msg?: string, problem?: string, [field: string]: unknown }

for (const backend of ['sqlite', 'pg'] as Backend[]) {
  t.test(`${backend}: SIGHUP swaps a good file and refuses a bad one with the check report`, async (t) => {
    const mock = await startMockUpstream()
    const written = writeTestConfig(() => {})
    const schema = randomSchemaName()
    t.teardown(async () => {
      await mock.close()
      written.remove()
      if (backend === 'pg') await dropSchema(schema)
    })
    const file = written.file
    const oldRaw = testRawConfig((c) => { setPrice(c, MODEL, '0.15', '0.60') })
    const newRaw = testRawConfig((c) => { setPrice(c, MODEL, '15.00', '60.00') })
    writeFileSync(file, stringify(oldRaw))
    const storeEnv = backend === 'pg' ? { databaseUrl: TEST_DATABASE_URL, schema } : { dataDir: join(written.dir, 'data') }
    const seed = await openStore({ secret: TEST_SECRET, ...storeEnv })
    const { account, key } = await seedFundedKey(seed, { account: 'sighup', key: 'k' }, parseMoney('100.00'))
    await seed.close()

    const [port, adminPort] = [await freePort(), await freePort()]
    const env: Record<string, string> = {
      PATH: process.env.PATH ?? '',
      ...mockEnv(mock.url),
      PORT: String(port),
      HOST: '127.0.0.1',
      GATEWAY_ADMIN_PORT: String(adminPort),
      GATEWAY_ADMIN_TOKEN: ADMIN_TOKEN,
      GATEWAY_SECRET: TEST_SECRET,
      LOG_LEVEL: 'info',
      ...(backend === 'pg' ? { DATABASE_URL: TEST_DATABASE_URL, DATABASE_SCHEMA: schema } : { GATEWAY_DATA_DIR: join(written.dir, 'data') })
    }
    const child = spawn(process.execPath, [CLI, 'serve', file], { env, stdio: ['ignore', 'pipe', 'pipe'] })
    let output = ''
    child.stdout.on('data', (c: Buffer) => { output += c.toString() })
    child.stderr.on('data', (c: Buffer) => { output += c.toString() })
    const exited = new Promise<number | null>((resolve) => child.on('exit', resolve))
    t.teardown(() => { if (child.exitCode === null) child.kill('SIGKILL') })
    const lines = (): LogLine[] => output.split('\n').flatMap((l) => { try { return [JSON.parse(l) as LogLine] } catch { return [] } })
    const waitForMsg = async (msg: string, count = 1): Promise<void> => {
      const deadline = Date.now() + 30_000
      while (lines().filter((l) => l.msg === msg).length < count) {
        if (Date.now() > deadline || child.exitCode !== null) throw new Error(`no "${msg}" in ${output}`)
        await new Promise((resolve) => setTimeout(resolve, 20))
      }
    }
    await waitForMsg('model gateway ready')

    const url = `http://127.0.0.1:${port}`
    // The served config as the admin listener reports it; the public /readyz says only the status.
    const readyz = async (): Promise<{ hash: string, last_reload_error: string | null }> =>
      ((await (await fetch(`http://127.0.0.1:${adminPort}/admin/v1/readyz`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).json()) as { checks: { config: { hash: string, last_reload_error: string | null } } }).checks.config
    const openai = new OpenAI({ apiKey: key, baseURL: `${url}/v1`, maxRetries: 0 })
    const chat = async (): Promise<string> => {
      const { response } = await openai.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'sighup' }] }).withResponse()
      return response.headers.get('x-request-id') ?? ''
    }
    const oldHash = loadConfig(file, env).hash
    t.equal((await readyz()).hash, oldHash, 'serves the file\'s hash')
    const first = await chat()

    writeFileSync(file, stringify(newRaw))
    const newHash = loadConfig(file, env).hash
    child.kill('SIGHUP')
    await waitForMsg('config reloaded')
    t.equal((await readyz()).hash, newHash, '/readyz: the new hash after SIGHUP')
    const instances = await (await fetch(`http://127.0.0.1:${adminPort}/admin/v1/instances`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).json() as { data: Array<{ config_hash: string, pid: number, self: boolean }> }
    t.same(instances.data.map((i) => [i.config_hash, i.pid, i.self]), [[newHash, child.pid, true]], 'the admin API lists the instance with its new hash')
    const second = await chat()

    // A bad file: a schema error and a model whose pool does not exist.
    const bad = testRawConfig((c) => {
      setPrice(c, MODEL, '99.00', '99.00')
      c.server.body_limit_bytes = -1
      const model = c.models.find((m) => m.id === MODEL)
      if (model) model.pool = 'no-such-pool'
    })
    writeFileSync(file, stringify(bad))
    const report = checkConfig(file, env).map(formatProblem)
    child.kill('SIGHUP')
    await waitForMsg('config reload refused: the running config keeps serving')
    const logged = lines().filter((l) => typeof l.problem === 'string').map((l) => l.problem)
    t.same(logged, report, `the log has the check report, line by line (${report.length} problems)`)
    const state = await readyz()
    t.equal(state.hash, newHash, '/readyz: the previous good config still serves')
    t.ok(state.last_reload_error !== null && report.every((line) => state.last_reload_error?.includes(line)), '/readyz shows the refusal')
    t.same(await (await fetch(`${url}/readyz`)).json(), { status: 'ready' }, 'the public /readyz says only the status')
    const third = await chat()

    child.kill('SIGTERM')
    t.equal(await exited, 0, 'SIGTERM still exits 0')
    t.notMatch(output, /Error: |at .*\.js:\d+/, 'no stack trace in the output')

    const store = await openStore({ secret: TEST_SECRET, ...storeEnv })
    t.teardown(async () => { await store.close() })
    const rows = new Map((await storeRows(store, account.id)).map((r) => [r.requestId, r]))
    const cost = (id: string, raw: typeof oldRaw): void => {
      const row = rows.get(id)
      const units = { inputTokens: row?.usage?.inputTokens ?? 0, outputTokens: row?.usage?.outputTokens ?? 0 }
      t.equal(row?.cost, expectedCost(priceOf(MODEL, raw), units), `${id}: billed at the price in force`)
    }
    cost(first, oldRaw)
    cost(second, newRaw)
    cost(third, newRaw)
  })
}
