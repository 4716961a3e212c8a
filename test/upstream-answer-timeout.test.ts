// A non-streamed answer's first byte comes only once the provider generated the whole answer, so
// the first-byte bound of a stream (providers.<p>.timeout_ms) cut long answers the provider was
// still working on: the tenant got PROVIDER_TIMEOUT (not billed) while the operator was billed by
// the provider, and the call was sent again to the pool's next member, to be generated (and
// billed) twice. A non-streamed answer now waits answer_timeout_ms (per provider, a route may
// override it); past it the call is cancelled, not retried, not billed, the hold released and the
// request log says PROVIDER_TIMEOUT. The configured values are short; the mock's delay before its
// headers stands for the generation. Outcomes are asserted, never elapsed time.
import t, { type Test } from 'tap'
import { startTestGateway, type TestGateway } from './helpers/gateway.js'
import { ledgerState, settledRow } from './helpers/billing.js'
import { writeTestConfig } from './helpers/test-config.js'

const TIMEOUT_MS = 300
const ANSWER_TIMEOUT_MS = 7000
/** Shorter than the served answer's wait, longer than a stream's two first-byte timeouts (undici checks them about once a second). */
const CLIENT_IDLE_MS = 4000
const ROUTE_ANSWER_TIMEOUT_MS = 300

interface Answer { status: number, headers: Headers, text: string }

async function post (gw: TestGateway, path: string, body: unknown, delayMs: number): Promise<Answer> {
  const res = await fetch(gw.url + path, {
    // A fresh connection each: the client's idle bound is per connection.
    keepalive: false,
    method: 'POST',
    headers: { 'content-type': 'application/json', ...gw.auth, 'x-mock-delay-ms': String(delayMs) },
    body: JSON.stringify(body)
  })
  return { status: res.status, headers: res.headers, text: await res.text() }
}

const chat = (extra: Record<string, unknown> = {}): Record<string, unknown> =>
  ({ model: 'openai/gpt-4o-mini', max_tokens: 16, messages: [{ role: 'user', content: 'hello' }], ...extra })

/** The 504 PROVIDER_TIMEOUT a timed-out call ends with, nothing billed, nothing held, its row. */
async function timedOut (t: Test, gw: TestGateway, a: Answer, balanceBefore: bigint): Promise<void> {
  t.equal(a.status, 504, 'HTTP 504')
  t.equal(a.headers.get('x-gateway-error-code'), 'PROVIDER_TIMEOUT')
  t.equal(a.headers.get('x-gateway-billed'), 'false')
  const body = JSON.parse(a.text) as { error: { code: string, billing: { status: string } } }
  t.match(body, { error: { code: 'PROVIDER_TIMEOUT', billing: { status: 'NOT_BILLED' } } }, 'the chat envelope')
  const row = await settledRow(gw, a.headers.get('x-request-id') ?? '')
  t.match(row, { status: 504, outcome: 'upstream_error', errorCode: 'PROVIDER_TIMEOUT', billingStatus: 'NOT_BILLED', postingId: null })
  t.ok(row.holdId !== null, 'a hold had been placed before the call')
  const ledger = await ledgerState(gw)
  t.equal(ledger.balance, balanceBefore, 'balance unchanged')
  t.equal(ledger.held, 0n, 'the hold released')
  t.equal(ledger.openHolds, 0, 'no open hold')
}

t.test('a non-streamed answer waits answer_timeout_ms, a stream timeout_ms', async (t) => {
  const cfg = writeTestConfig((c) => {
    // Two members on one pool: a retried call would reach the second.
    const openai = c.providers.openai
    if (openai === undefined) throw new Error('no openai provider')
    openai.timeout_ms = TIMEOUT_MS
    openai.answer_timeout_ms = ANSWER_TIMEOUT_MS
    c.providers.openai_b = { ...openai }
    c.pools.openai = [{ provider: 'openai', weight: 1 }, { provider: 'openai_b', weight: 1 }]
    c.upstream = { max_tries: 2, breaker_failures: 0 }
    // The client's idle bound is shorter than the answer's wait: the wait must not cut the client.
    c.server.connection_idle_timeout_ms = CLIENT_IDLE_MS
    const messages = c.routes.find((r) => r.operation === 'messages')
    if (messages === undefined) throw new Error('no messages route')
    messages.answer_timeout_ms = ROUTE_ANSWER_TIMEOUT_MS
    const anthropic = c.providers.anthropic
    if (anthropic !== undefined) anthropic.timeout_ms = 5000
  })
  t.teardown(() => { cfg.remove() })
  const gw = await startTestGateway({ configFile: cfg.file, credit: '10.00' })
  t.teardown(() => gw.close())
  t.beforeEach(() => { gw.mock.reset() })

  t.test('a non-streamed answer slower than timeout_ms (and than the client idle bound) is served and billed once', async (t) => {
    const before = await ledgerState(gw)
    const a = await post(gw, '/v1/chat/completions', chat(), 5000)
    t.equal(a.status, 200, a.text)
    t.equal(gw.mock.calls.length, 1, 'one upstream call')
    const row = await settledRow(gw, a.headers.get('x-request-id') ?? '')
    t.match(row, { status: 200, outcome: 'completed', billingStatus: 'BILLED', errorCode: null })
    t.ok(row.cost !== null && row.cost > 0n, 'a cost')
    const after = await ledgerState(gw)
    t.equal(after.balance, before.balance - (row.cost ?? 0n), 'the wallet paid the row\'s cost')
    t.equal(after.charges.length, before.charges.length + 1, 'one charge')
    t.equal(after.openHolds, 0, 'no open hold')
  })

  t.test('a non-streamed answer past answer_timeout_ms: 504 PROVIDER_TIMEOUT, not retried on the other member, not billed', async (t) => {
    const before = await ledgerState(gw)
    const a = await post(gw, '/v1/chat/completions', chat(), 20000)
    await timedOut(t, gw, a, before.balance)
    t.equal(gw.mock.calls.length, 1, 'the provider was asked once: a retry would generate (and bill) the answer twice')
  })

  t.test('a stream still waits timeout_ms for its first byte, and is retried on the other member', async (t) => {
    const before = await ledgerState(gw)
    const a = await post(gw, '/v1/chat/completions', chat({ stream: true }), 1500)
    await timedOut(t, gw, a, before.balance)
    t.equal(gw.mock.calls.length, 2, 'the first-byte timeout of a stream is tried on the other member')
  })

  t.test('a route\'s answer_timeout_ms overrides the provider\'s', async (t) => {
    const before = await ledgerState(gw)
    const a = await post(gw, '/v1/messages', { model: 'anthropic/claude-haiku-3.5', max_tokens: 16, messages: [{ role: 'user', content: 'hello' }] }, 1500)
    t.equal(a.status, 504, a.text)
    t.equal(a.headers.get('x-gateway-error-code'), 'PROVIDER_TIMEOUT')
    const body = JSON.parse(a.text) as { type: string, error: { type: string } }
    t.equal(body.type, 'error', 'the messages envelope')
    const row = await settledRow(gw, a.headers.get('x-request-id') ?? '')
    t.match(row, { status: 504, errorCode: 'PROVIDER_TIMEOUT', billingStatus: 'NOT_BILLED' })
    const after = await ledgerState(gw)
    t.equal(after.balance, before.balance, 'balance unchanged')
    t.equal(after.openHolds, 0, 'no open hold')
  })
})
