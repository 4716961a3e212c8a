// Observability: the access log (one line per request, nothing secret in it), Prometheus
// /metrics (names, labels, values after real requests; where it is served) and /readyz.
import { Writable } from 'node:stream'
import t from 'tap'
import { buildAdminServer } from '../../plugins/apps/server/admin-server.js'
import { GatewayMetrics } from '../../plugins/concerns/metrics/index.js'
import { settledRow, sleep } from '../helpers/billing.js'
import { dropSchema, startTestGateway, TEST_REDIS_URL } from '../helpers/gateway.js'

const PROMPT = 'the-secret-prompt-7f3a9 tell me everything'
const CHAT = '/v1/chat/completions'

function capture (): { lines: () => Array<Record<string, any>>, raw: () => string, logger: { level: string, stream: Writable } } {
  let raw = ''
  const stream = new Writable({ write (chunk, _enc, done) { raw += String(chunk); done() } })
  return { raw: () => raw, lines: () => raw.split('\n').filter((l) => l !== '').map((l) => JSON.parse(l)), logger: { level: 'info', stream } }
}

async function chat (url: string, headers: Record<string, string>, body: Record<string, unknown>): Promise<Response> {
  return await fetch(url + CHAT, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) })
}

t.test('access log: one line per request, with its fields, never a key, credential or prompt', async (t) => {
  const log = capture()
  const gw = await startTestGateway({ server: { logger: log.logger } })
  t.teardown(() => gw.close())
  const ok = await chat(gw.url, gw.auth, { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: PROMPT }] })
  await ok.arrayBuffer()
  const okId = ok.headers.get('x-request-id') ?? ''
  const stream = await chat(gw.url, { 'x-api-key': gw.key }, { model: 'openai/gpt-4o-mini', stream: true, messages: [{ role: 'user', content: PROMPT }] })
  await stream.arrayBuffer()
  const badKey = 'sk-this-key-does-not-exist-0123456789abcdef'
  const refused = await chat(gw.url, { authorization: `Bearer ${badKey}` }, { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: PROMPT }] })
  await refused.arrayBuffer()
  const unknownModel = await chat(gw.url, gw.auth, { model: 'no-such/model-secretish', messages: [{ role: 'user', content: PROMPT }] })
  await unknownModel.arrayBuffer()
  await settledRow(gw, okId)
  for (let i = 0; i < 50 && log.lines().filter((l) => l.msg === 'request').length < 4; i++) await sleep(20)

  const lines = log.lines().filter((l) => l.msg === 'request')
  t.equal(lines.length, 4, 'one line per request')
  const first = lines.find((l) => l.requestId === okId)
  t.ok(first, 'the line carries the X-Request-ID the client saw')
  t.match(first, {
    level: 30,
    route: 'POST /v1/chat/completions',
    model: 'openai/gpt-4o-mini',
    status: 200,
    code: null,
    outcome: 'completed',
    billing: 'BILLED',
    billed: /^0\.\d+$/,
    overheadMs: Number,
    upstreamMs: Number,
    totalMs: Number,
    accountId: gw.account.id,
    keyId: String
  })
  const denied = lines.find((l) => l.requestId === refused.headers.get('x-request-id'))
  t.match(denied, { status: 401, code: String, billing: 'NOT_BILLED', billed: null, accountId: null, model: null })
  const unknown = lines.find((l) => l.requestId === unknownModel.headers.get('x-request-id'))
  t.match(unknown, { model: null, status: 404 }, 'a model id that matched nothing is not echoed')
  const raw = log.raw()
  for (const secret of [gw.key, badKey, PROMPT.split(' ')[0] as string, 'upstream-openai-secret', 'no-such/model-secretish']) {
    t.notOk(raw.includes(secret), `the log holds no ${secret.slice(0, 12)}…`)
  }
})

t.test('access log off: no line (and no hook)', async (t) => {
  const log = capture()
  const gw = await startTestGateway({ server: { logger: log.logger } })
  t.teardown(() => gw.close())
  // The same gateway.yaml with the access log switched off, through a second server on the same store.
  const off = await startTestGateway({ shareStoreWith: gw, mock: gw.mock, server: { logger: log.logger, plugins: (list) => list.filter((p) => p.name !== 'access-log') } })
  t.teardown(() => off.close())
  const res = await chat(off.url, gw.auth, { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] })
  await res.arrayBuffer()
  await settledRow(off, res.headers.get('x-request-id') ?? '')
  t.equal(log.lines().filter((l) => l.msg === 'request').length, 0)
})

t.test('/metrics: names, labels and values after real requests; on the admin listener, not the public one', async (t) => {
  const metrics = new GatewayMetrics()
  const gw = await startTestGateway({ server: { metrics } })
  t.teardown(() => gw.close())
  for (let i = 0; i < 3; i++) await (await chat(gw.url, gw.auth, { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hello there' }] })).arrayBuffer()
  const streamed = await chat(gw.url, gw.auth, { model: 'openai/gpt-4o-mini', stream: true, messages: [{ role: 'user', content: 'hello' }] })
  await streamed.arrayBuffer()
  await (await chat(gw.url, { authorization: 'Bearer sk-nope-0000000000000000000000000000' }, { model: 'openai/gpt-4o-mini', messages: [] })).arrayBuffer()
  await settledRow(gw, streamed.headers.get('x-request-id') ?? '')

  const publicAnswer = await fetch(gw.url + '/metrics')
  t.equal(publicAnswer.status, 404, 'not on the public listener by default')
  await publicAnswer.arrayBuffer()

  const admin = await buildAdminServer({ config: gw.config, store: gw.services.store, metrics: { metrics, path: '/metrics' }, logger: false })
  t.teardown(() => admin.close())
  const scraped = await admin.inject({ method: 'GET', url: '/metrics' })
  t.equal(scraped.statusCode, 200)
  t.match(scraped.headers['content-type'], /^text\/plain; version=0\.0\.4/)
  const text = scraped.body
  const value = (pattern: RegExp): number => Number(pattern.exec(text)?.[1] ?? NaN)
  t.equal(value(/^gateway_requests_total\{route="POST \/v1\/chat\/completions",model="openai\/gpt-4o-mini",code="OK"\} (\d+)$/m), 4, 'four answered chat requests')
  t.equal(value(/^gateway_requests_total\{route="POST \/v1\/chat\/completions",model="",code="AUTH_[A-Z_]+"\} (\d+)$/m), 1, 'the refused one, by its code')
  t.equal(value(/^gateway_upstream_latency_seconds_count\{route="POST \/v1\/chat\/completions",model="openai\/gpt-4o-mini"\} (\d+)$/m), 4)
  t.equal(value(/^gateway_overhead_seconds_count\{route="POST \/v1\/chat\/completions"\} (\d+)$/m), 4)
  t.match(text, /^gateway_overhead_seconds_bucket\{route="POST \/v1\/chat\/completions",le="\+Inf"\} 4$/m)
  t.ok(value(/^gateway_tokens_total\{model="openai\/gpt-4o-mini",direction="input"\} (\d+)$/m) > 0, 'input tokens')
  t.ok(value(/^gateway_tokens_total\{model="openai\/gpt-4o-mini",direction="output"\} (\d+)$/m) > 0, 'output tokens')
  t.ok(value(/^gateway_spend_total\{model="openai\/gpt-4o-mini"\} ([\d.e-]+)$/m) > 0, 'spend')
  t.equal(value(/^gateway_open_streams (\d+)$/m), 0, 'no stream open after the answers ended')
  t.equal(value(/^gateway_holds_outstanding (\d+)$/m), 0, 'no hold kept after settlement')
  t.equal(value(/^gateway_request_log_queue_depth (\d+)$/m), 0, 'the request log queue drained')
  for (const name of ['gateway_circuit_state', 'gateway_process_cpu_user_seconds_total', 'gateway_nodejs_eventloop_lag_seconds']) {
    t.match(text, new RegExp(`^# TYPE ${name} `, 'm'), `${name} is exported`)
  }
  t.match(text, /^gateway_circuit_state\{provider="openai"\} 0$/m, "the openai member's circuit, read from the breaker: closed")
  // Three 503s in a row (upstream.breaker_failures) open the member's circuit; the scrape shows it.
  for (let i = 0; i < 3; i++) {
    await (await chat(gw.url, { ...gw.auth, 'x-mock-status': '503' }, { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'busy?' }] })).arrayBuffer()
  }
  t.match((await admin.inject({ method: 'GET', url: '/metrics' })).body, /^gateway_circuit_state\{provider="openai"\} 2$/m, 'open after three upstream 503s')
  t.notOk(text.includes(gw.key), 'no key in the metrics')
})

t.test('/metrics counts an open stream while it streams', async (t) => {
  const metrics = new GatewayMetrics({ defaultMetrics: false })
  const gw = await startTestGateway({ server: { metrics } })
  t.teardown(() => gw.close())
  const res = await fetch(gw.url + CHAT, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...gw.auth, 'x-mock-chunks': '20', 'x-mock-chunk-delay-ms': '50' },
    body: JSON.stringify({ model: 'openai/gpt-4o-mini', stream: true, messages: [{ role: 'user', content: 'slow' }] })
  })
  const reader = res.body?.getReader()
  await reader?.read()
  t.match(await metrics.registry.metrics(), /^gateway_open_streams 1$/m, 'one stream open')
  while (!(await reader?.read())?.done) { /* drain */ }
  await settledRow(gw, res.headers.get('x-request-id') ?? '')
  t.match(await metrics.registry.metrics(), /^gateway_open_streams 0$/m, 'closed at its end')
})

const READYZ_ADMIN_TOKEN = 'readyz-admin-token-0123456789abcdefghij'

for (const backend of ['sqlite', 'pg'] as const) {
  t.test(`/readyz checks the database, Redis and reports the config (${backend})`, async (t) => {
    const gw = await startTestGateway({ backend, server: { adminToken: READYZ_ADMIN_TOKEN }, ...(backend === 'pg' ? { redisChannel: `ops-readyz-${process.pid}` } : {}) })
    let closed = false
    t.teardown(async () => { if (!closed) await gw.close() })
    const publicReady = await fetch(gw.url + '/readyz')
    t.equal(publicReady.status, 200, 'the public /readyz: 200')
    t.same(await publicReady.json(), { status: 'ready' }, 'the public /readyz says only the status')
    // The checks and the config are the operators': the admin API's report.
    const detail = async (): Promise<Response> => await fetch(gw.url + '/admin/v1/readyz', { headers: { authorization: `Bearer ${READYZ_ADMIN_TOKEN}` } })
    const ready = await detail()
    const body = await ready.json() as Record<string, any>
    t.equal(ready.status, 200, JSON.stringify(body))
    t.match(body, { status: 'ready', checks: { database: { kind: backend, ok: true }, config: { ok: true, hash: /^[0-9a-f]{64}$/ } } })
    t.same(body.checks.redis.configured, backend === 'pg', 'Redis is checked when configured')
    if (backend === 'pg') {
      t.equal(body.checks.redis.ok, true)
      t.notOk(JSON.stringify(body).includes(TEST_REDIS_URL), 'no connection string')
      // The database goes away: the instance says it cannot serve.
      const backendPool = gw.services.store.backend
      if (backendPool.kind === 'pg') await backendPool.pool.end()
      const down = await detail()
      const downBody = await down.json() as Record<string, any>
      t.equal(down.status, 503, JSON.stringify(downBody))
      t.match(downBody, { status: 'not_ready', checks: { database: { ok: false, error: String } } })
      const publicDown = await fetch(gw.url + '/readyz')
      t.equal(publicDown.status, 503, 'the public /readyz: 503')
      t.same(await publicDown.json(), { status: 'not_ready' }, 'with only the status: which check failed is the operators\'')
      closed = true
      const step = async (name: string, p: Promise<unknown>): Promise<void> => {
        const started = Date.now()
        await p.catch(() => {})
        t.comment(`${name}: ${Date.now() - started} ms`)
      }
      await step('app', gw.app.close())
      // The pool is gone, so the services' close stops at the store: the Redis bus is closed by hand.
      await step('services', gw.services.close())
      await step('bus', gw.services.store.bus.close())
      await step('mock', gw.mock.close())
      await step('schema', dropSchema(gw.location))
    }
  })
}
