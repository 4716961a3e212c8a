// Issue 14, the table: every upstream failure and every answer Fastify or Node would give on
// its own, in each of the three envelopes (chat completions, messages, generative content),
// with every header of the spec's error rules: X-Request-ID, X-Gateway-Error-Code,
// X-Gateway-Error-Reference, Link rel=describedby, Content-Language, X-Gateway-Billed,
// Retry-After where the error defines one, Cache-Control: no-store. A 4xx the client caused
// upstream keeps the provider's body (its SDK parses it) and still carries every header.
import { readFileSync } from 'node:fs'
import t, { type Test } from 'tap'
import { parse } from 'yaml'
import type { ErrorsConfig } from '../plugins/foundation/config/types.js'
import { startTestGateway, type TestGateway } from './helpers/gateway.js'
import { answerOn, openConnection, parseAnswer, requestHead } from './helpers/raw-http.js'
import { writeTestConfig, type RawConfig } from './helpers/test-config.js'
import { closedPort } from './helpers/wire.js'
import { repoPath } from './helpers/paths.js'

type Family = 'chat' | 'messages' | 'genai'
const FAMILIES: readonly Family[] = ['chat', 'messages', 'genai']

const { errors: CATALOGUE } = parse(readFileSync(repoPath('config', 'errors.yaml'), 'utf8')) as { errors: ErrorsConfig }
const DOCS = 'https://docs.model-gateway.dev/errors'

const REQUESTS: Record<Family, { path: string, body: string }> = {
  chat: { path: '/v1/chat/completions', body: JSON.stringify({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }) },
  messages: { path: '/v1/messages', body: JSON.stringify({ model: 'anthropic/claude-haiku-3.5', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] }) },
  genai: { path: '/genai/v1beta/models/genai%2Fgemini-2.5-flash:generateContent', body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'hi' }] }] }) }
}
/** A path of each family that no route serves. */
const UNKNOWN: Record<Family, string> = { chat: '/v1/nothing-here', messages: '/msgs/v1/nothing-here', genai: '/genai/v1beta/models/x:nothingHere' }

interface Answer { status: number, header: (name: string) => string | null, text: string }

function entryOf (code: string): ErrorsConfig['catalogue'][number] {
  const e = CATALOGUE.catalogue.find((x) => x.code === code)
  if (e === undefined) throw new Error(`${code} is not in the catalogue`)
  return e
}

/**
 * Every header of the error rules, the status, and (unless `relayed`) the family's envelope
 * with the canonical code. `retryAfter`: the Retry-After expected (null: none).
 */
function expectContract (t: Test, a: Answer, family: Family, code: string, opts: { status?: number, retryAfter?: number | null, relayed?: boolean } = {}): void {
  const entry = entryOf(code)
  const status = opts.status ?? entry.status
  t.equal(a.status, status, `${family} ${code}: HTTP ${status}`)
  t.match(a.header('x-request-id'), /^req_[0-9a-f]{32}$/, 'X-Request-ID')
  t.equal(a.header('x-gateway-error-code'), code, 'X-Gateway-Error-Code')
  t.equal(a.header('x-gateway-error-reference'), entry.reference, 'X-Gateway-Error-Reference')
  t.equal(a.header('link'), `<${DOCS}/${entry.reference}>; rel="describedby"`, 'Link rel=describedby')
  t.equal(a.header('content-language'), 'en', 'Content-Language')
  t.equal(a.header('x-gateway-billed'), 'false', 'X-Gateway-Billed: false')
  t.equal(a.header('cache-control'), 'no-store', 'Cache-Control: no-store')
  const expectedRetry = opts.retryAfter === undefined ? (entry.retry?.after_seconds ?? null) : opts.retryAfter
  t.equal(a.header('retry-after'), expectedRetry === null ? null : String(expectedRetry), `Retry-After ${expectedRetry ?? 'absent'}`)
  const body = JSON.parse(a.text) as Record<string, any>
  if (opts.relayed === true) {
    t.match(a.text, /Mock upstream error/, 'the provider\'s own body is relayed')
    return
  }
  if (family === 'chat') {
    t.match(body, { error: { code, reference: entry.reference, request_id: a.header('x-request-id'), billing: { status: 'NOT_BILLED' } } }, 'chat-completions envelope')
  } else if (family === 'messages') {
    t.match(body, { type: 'error', error: { code, reference: entry.reference }, request_id: a.header('x-request-id') }, 'messages envelope')
  } else {
    t.match(body, { error: { code: status, status: code, details: [{ reason: code, metadata: { reference: entry.reference } }] } }, 'generative-content envelope')
  }
  t.notMatch(a.text, /Mock upstream error|statusCode|"error":"[A-Z]/, 'neither the provider\'s nor Fastify\'s own body')
}

async function call (gw: TestGateway, family: Family, headers: Record<string, string> = {}): Promise<Answer> {
  const r = REQUESTS[family]
  const res = await fetch(gw.url + r.path, { method: 'POST', headers: { 'content-type': 'application/json', ...gw.auth, ...headers }, body: r.body })
  return { status: res.status, header: (n) => res.headers.get(n), text: await res.text() }
}

/** Every provider of the config: short first-byte and answer timeouts, circuit breaking as given. */
function edit (upstream: Record<string, unknown>, baseUrl?: string): (c: RawConfig) => void {
  return (c) => {
    for (const p of Object.values(c.providers)) {
      p.timeout_ms = 400
      p.answer_timeout_ms = 400
      if (baseUrl !== undefined) p.base_url = baseUrl
    }
    c.upstream = upstream
  }
}

t.test('upstream failures, in every envelope, with every header', async (t) => {
  const cfg = writeTestConfig(edit({ breaker_failures: 0 }))
  t.teardown(() => { cfg.remove() })
  const gw = await startTestGateway({ configFile: cfg.file })
  t.teardown(() => gw.close())

  const cases: Array<{ name: string, headers: Record<string, string>, code: string, status?: number, retryAfter?: number | null, relayed?: boolean }> = [
    { name: 'stall before the first byte', headers: { 'x-mock-delay-ms': '3000' }, code: 'PROVIDER_TIMEOUT' },
    { name: 'upstream 504', headers: { 'x-mock-status': '504' }, code: 'PROVIDER_TIMEOUT' },
    { name: 'upstream 500', headers: { 'x-mock-status': '500' }, code: 'UPSTREAM_ERROR' },
    { name: 'upstream 502', headers: { 'x-mock-status': '502' }, code: 'UPSTREAM_ERROR' },
    { name: 'upstream 503 with Retry-After 9', headers: { 'x-mock-status': '503', 'x-mock-retry-after': '9' }, code: 'MODEL_BUSY', retryAfter: 9 },
    { name: 'upstream 503 with Retry-After 1 (raised to 5)', headers: { 'x-mock-status': '503', 'x-mock-retry-after': '1' }, code: 'MODEL_BUSY', retryAfter: 5 },
    { name: 'upstream 529 (overloaded)', headers: { 'x-mock-status': '529' }, code: 'MODEL_BUSY', retryAfter: 5 },
    { name: 'upstream 429 with Retry-After 3', headers: { 'x-mock-status': '429', 'x-mock-retry-after': '3' }, code: 'LIMIT_RATE_EXCEEDED', retryAfter: 3 },
    { name: 'upstream 429 with Retry-After 42', headers: { 'x-mock-status': '429', 'x-mock-retry-after': '42' }, code: 'LIMIT_RATE_EXCEEDED', retryAfter: 42 },
    { name: 'upstream 401 (the gateway\'s provider credentials)', headers: { 'x-mock-status': '401' }, code: 'UPSTREAM_ERROR' },
    { name: 'upstream 400 (the client\'s request)', headers: { 'x-mock-status': '400' }, code: 'REQUEST_INVALID', status: 400, relayed: true, retryAfter: null },
    { name: 'upstream 422', headers: { 'x-mock-status': '422' }, code: 'REQUEST_INVALID', status: 422, relayed: true, retryAfter: null },
    { name: 'upstream 404', headers: { 'x-mock-status': '404' }, code: 'MODEL_NOT_FOUND', status: 404, relayed: true, retryAfter: null },
    { name: 'upstream 413', headers: { 'x-mock-status': '413' }, code: 'REQUEST_TOO_LARGE', status: 413, relayed: true, retryAfter: null }
  ]
  for (const c of cases) {
    for (const family of FAMILIES) {
      const a = await call(gw, family, c.headers)
      t.test(`${c.name} → ${c.code} (${family})`, async (t) => {
        expectContract(t, a, family, c.code, {
          ...(c.status === undefined ? {} : { status: c.status }),
          ...(c.retryAfter === undefined ? {} : { retryAfter: c.retryAfter }),
          ...(c.relayed === true ? { relayed: true } : {})
        })
      })
    }
  }
})

t.test('no member can be reached: MODEL_UNAVAILABLE; every circuit open: the same, with Retry-After', async (t) => {
  const port = await closedPort()
  const cfg = writeTestConfig(edit({ breaker_failures: 1, breaker_cooldown_ms: 60_000 }, `http://127.0.0.1:${port}`))
  t.teardown(() => { cfg.remove() })
  const gw = await startTestGateway({ configFile: cfg.file })
  t.teardown(() => gw.close())
  for (const family of FAMILIES) {
    const refused = await call(gw, family)
    expectContract(t, refused, family, 'MODEL_UNAVAILABLE', { retryAfter: null })
    const started = Date.now()
    const open = await call(gw, family)
    t.ok(Date.now() - started < 300, 'an open circuit answers at once')
    expectContract(t, open, family, 'MODEL_UNAVAILABLE', { retryAfter: 60 })
  }
})

t.test('framework answers in the gateway envelope: unknown route, wrong method, unparsable body, oversized headers', async (t) => {
  const gw = await startTestGateway()
  t.teardown(() => gw.close())
  for (const family of FAMILIES) {
    const unknown = await fetch(gw.url + UNKNOWN[family], { method: 'POST', headers: { 'content-type': 'application/json', ...gw.auth }, body: '{}' })
    expectContract(t, { status: unknown.status, header: (n) => unknown.headers.get(n), text: await unknown.text() }, family, 'REQUEST_ROUTE_NOT_FOUND')

    const method = await fetch(gw.url + REQUESTS[family].path, { method: 'PUT', headers: { 'content-type': 'application/json', ...gw.auth }, body: '{}' })
    expectContract(t, { status: method.status, header: (n) => method.headers.get(n), text: await method.text() }, family, 'REQUEST_ROUTE_NOT_FOUND')

    const bad = await fetch(gw.url + REQUESTS[family].path, { method: 'POST', headers: { 'content-type': 'application/json', ...gw.auth }, body: '{"model": ' })
    expectContract(t, { status: bad.status, header: (n) => bad.headers.get(n), text: await bad.text() }, family, 'REQUEST_INVALID')

    const conn = await openConnection(gw.url)
    conn.socket.write(requestHead('POST', REQUESTS[family].path, { 'content-type': 'application/json', 'content-length': 2, 'x-padding': 'p'.repeat(20_000) }) + '{}')
    const big = await answerOn(conn, 5000)
    if (big === null) throw new Error('no answer to oversized headers')
    expectContract(t, { status: big.status, header: (n) => big.headers[n] ?? null, text: big.body.toString('utf8') }, family, 'REQUEST_HEADERS_TOO_LARGE')
    t.equal(big.headers.connection, 'close', 'the connection is closed after it')
    conn.socket.destroy()
  }
})

t.test('a request arriving while the server shuts down: MODEL_BUSY in its envelope, not Fastify\'s 503 body', async (t) => {
  for (const family of FAMILIES) {
    const gw = await startTestGateway()
    let closed = false
    t.teardown(async () => { if (!closed) await gw.close() })
    // One stream in flight keeps the graceful shutdown waiting; a kept-alive connection sends a request meanwhile.
    const conn = await openConnection(gw.url)
    conn.socket.write(requestHead('GET', '/healthz', {}))
    const health = await answerOn(conn, 5000)
    t.equal(health?.status, 200)
    const streaming = fetch(gw.url + '/v1/chat/completions', {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...gw.auth, 'x-mock-chunks': '10', 'x-mock-chunk-delay-ms': '100' },
      body: JSON.stringify({ model: 'openai/gpt-4o-mini', stream: true, messages: [{ role: 'user', content: 'hi' }] })
    }).then(async (r) => await r.text())
    await gw.mock.waitForCalls(1)
    const closing = gw.close()
    closed = true
    await new Promise((resolve) => setTimeout(resolve, 100))
    const before = conn.received().length
    const r = REQUESTS[family]
    conn.socket.write(requestHead('POST', r.path, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(r.body), ...gw.auth }) + r.body)
    let answer = null
    for (let i = 0; i < 200 && answer === null; i++) {
      await new Promise((resolve) => setTimeout(resolve, 10))
      const got = parseAnswer(conn.received().subarray(before))
      const length = Number(got?.headers['content-length'] ?? NaN)
      if (got !== null && got.body.length >= length) answer = got
    }
    if (answer === null) throw new Error('no answer during shutdown')
    const a = answer
    expectContract(t, { status: a.status, header: (n) => a.headers[n] ?? null, text: a.body.toString('utf8') }, family, 'MODEL_BUSY')
    t.equal(a.headers.connection, 'close')
    await streaming
    await closing
    conn.socket.destroy()
  }
})
