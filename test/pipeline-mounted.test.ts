// The package entry mounts the whole gateway inside an app of the operator's own: every phase
// (key check, billing, request log) on the stores the environment names, as `npm start` opens
// them, and the app's own routes untouched. Regression for a mounted gateway that forwarded
// requests with no key check and no billing (auth and wallet were added by the server only).
// It imports the built entry (`npm test` builds first), the way an operator's app would.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Fastify from 'fastify'
import t from 'tap'
import { loadConfig, modelGateway } from 'model-gateway'
import { openServices } from '../plugins/apps/gateway/index.js'
import { formatMoney, parseMoney } from '../plugins/foundation/pricing/money.js'
import { dropSchema, randomSchemaName, seedFundedKey, TEST_DATABASE_URL, TEST_SECRET } from './helpers/store.js'
import { startMockUpstream } from './fixtures/mock-upstream.js'
import { mockEnv, REPO_CONFIG } from './helpers/gateway.js'

const mock = await startMockUpstream()
t.teardown(() => mock.close())

const backends: Array<{ name: string, env: () => Record<string, string>, cleanup: (env: Record<string, string | undefined>) => Promise<void> }> = [
  {
    name: 'embedded SQLite (GATEWAY_DATA_DIR)',
    env: () => ({ GATEWAY_DATA_DIR: mkdtempSync(join(tmpdir(), 'gw-mounted-')) }),
    cleanup: async (env) => { rmSync(env.GATEWAY_DATA_DIR ?? '', { recursive: true, force: true }) }
  },
  {
    name: 'PostgreSQL (DATABASE_URL)',
    env: () => ({ DATABASE_URL: TEST_DATABASE_URL, DATABASE_SCHEMA: randomSchemaName() }),
    cleanup: async (env) => { await dropSchema(env.DATABASE_SCHEMA ?? '') }
  }
]

for (const backend of backends) {
  t.test(`mounted in an existing app, on ${backend.name}`, async (t) => {
    const env: Record<string, string | undefined> = { ...backend.env(), GATEWAY_SECRET: TEST_SECRET }
    // The environment npm start reads; the mounted gateway must open its stores from it.
    const saved = { ...process.env }
    Object.assign(process.env, env)
    t.teardown(async () => {
      for (const k of Object.keys(env)) delete process.env[k]
      Object.assign(process.env, saved)
      await backend.cleanup(env)
    })

    // Seed an account and key on the same store, from outside the app.
    const seeding = await openServices({ dataDir: env.GATEWAY_DATA_DIR, databaseUrl: env.DATABASE_URL, schema: env.DATABASE_SCHEMA, secret: TEST_SECRET })
    const { account, key } = await seedFundedKey(seeding.store, { account: 'mounted', key: 'mounted key' }, parseMoney('10.00'))
    await seeding.close()

    const app = Fastify({ logger: false })
    app.get('/own/hello', async () => ({ hello: 'from the app' }))
    app.post('/own/echo', async (req) => ({ echoed: req.body }))
    await app.register(modelGateway, { config: await loadConfig(REPO_CONFIG, { ...process.env, ...mockEnv(mock.url) }) })
    await app.listen({ port: 0, host: '127.0.0.1' })
    t.teardown(() => app.close())
    const address = app.server.address()
    if (address === null || typeof address === 'string') throw new Error('no port')
    const url = `http://127.0.0.1:${address.port}`
    const chat = JSON.stringify({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hello there' }] })
    mock.reset()

    const keyless = await fetch(`${url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: chat })
    t.equal(keyless.status, 401)
    t.equal(((await keyless.json()) as { error: { code: string } }).error.code, 'AUTH_API_KEY_REQUIRED', 'a key-less call is refused')
    t.equal(mock.calls.length, 0, 'and never forwarded')

    const keyed = await fetch(`${url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` }, body: chat })
    t.equal(keyed.status, 200)
    await keyed.json()
    t.equal(keyed.headers.get('x-gateway-billed'), 'pending', 'a held, billable request')
    const requestId = keyed.headers.get('x-request-id') ?? ''

    // Close the app: settlement and the request log are flushed before the stores close.
    await app.close()
    const check = await openServices({ dataDir: env.GATEWAY_DATA_DIR, databaseUrl: env.DATABASE_URL, schema: env.DATABASE_SCHEMA, secret: TEST_SECRET })
    t.teardown(() => check.close())
    const row = await check.store.requestLog.get(requestId)
    t.ok(row !== null, 'the request log row is in the store the environment named')
    t.equal(row?.billingStatus, 'BILLED')
    t.ok((row?.cost ?? 0n) > 0n, 'a positive charge')
    const wallet = await check.store.ledger.wallet(account.id)
    t.equal(formatMoney(wallet.balance), formatMoney(parseMoney('10.00') - (row?.cost ?? 0n)), 'the wallet paid exactly the charge')
  })
}

t.test("the app's own routes and 404s are its own", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'gw-mounted-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const app = Fastify({ logger: false })
  app.get('/own/hello', async () => ({ hello: 'from the app' }))
  app.post('/own/echo', async (req) => ({ echoed: req.body }))
  await app.register(modelGateway, { config: await loadConfig(REPO_CONFIG, { ...process.env, ...mockEnv(mock.url) }), env: { dataDir: dir, secret: TEST_SECRET } })
  t.teardown(() => app.close())
  const hello = await app.inject({ method: 'GET', url: '/own/hello' })
  t.same(hello.json(), { hello: 'from the app' })
  const echo = await app.inject({ method: 'POST', url: '/own/echo', payload: { a: 1 } })
  t.same(echo.json(), { echoed: { a: 1 } }, "the app's JSON parser is untouched by the gateway's")
  t.equal(hello.headers['x-gateway-error-code'], undefined)
})
