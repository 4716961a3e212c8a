// Upstream resilience (issue 14): a pool of two members where one fails (connection refused, a
// retryable status, a stall before the first byte) is answered by the other within
// upstream.max_tries; consecutive failures open the failing member's circuit so it is skipped
// at once, and it rejoins after its cool-down; a primary model whose whole pool is down is
// answered by its fallback, priced at the fallback, never by a fallback the key may not use; a
// client that leaves a stream cancels its upstream at once and is billed an estimate of what
// was produced (drain_on_disconnect keeps the old read-on); a stream cut after k chunks reaches
// the official SDK as an error and bills only what was produced.
import OpenAI from 'openai'
import t from 'tap'
import { replyChunks, startMockUpstream, type MockUpstream } from './fixtures/mock-upstream.js'
import { adminClient, settledRow, sleep } from './helpers/billing.js'
import { startTestGateway, type TestGateway } from './helpers/gateway.js'
import { writeTestConfig, type RawConfig } from './helpers/test-config.js'
import { closedPort } from './helpers/wire.js'

const ADMIN_TOKEN = 'upstream-admin-token-0123456789abcdef'
const CHAT = '/v1/chat/completions'
const chatBody = (model: string, extra: Record<string, unknown> = {}): string =>
  JSON.stringify({ model, messages: [{ role: 'user', content: 'hello there' }], ...extra })

interface UpstreamsView {
  providers: Array<{ name: string, state: string, failures: number, successes: number, times_opened: number, pools: string[] }>
}

/** The openai pool gets a second member, `openai_b`, at OPENAI_B_BASE_URL. */
function twoMembers (c: RawConfig, upstream: Record<string, unknown>): void {
  const a = c.providers.openai
  if (a === undefined) throw new Error('gateway.yaml has no openai provider')
  c.providers.openai_b = { ...a, base_url: '${OPENAI_B_BASE_URL}' } // eslint-disable-line no-template-curly-in-string
  c.pools.openai = [{ provider: 'openai', weight: 1 }, { provider: 'openai_b', weight: 1 }]
  c.upstream = upstream
}

async function chat (gw: TestGateway, model = 'openai/gpt-4o-mini', headers: Record<string, string> = {}): Promise<Response> {
  return await fetch(gw.url + CHAT, { method: 'POST', headers: { 'content-type': 'application/json', ...gw.auth, ...headers }, body: chatBody(model) })
}

async function upstreamsOf (gw: TestGateway): Promise<UpstreamsView> {
  const res = await adminClient(gw, ADMIN_TOKEN)<UpstreamsView>('GET', '/upstreams')
  if (res.status !== 200) throw new Error(`GET /admin/v1/upstreams answered ${res.status}`)
  return res.json
}

function member (view: UpstreamsView, name: string): UpstreamsView['providers'][number] {
  const m = view.providers.find((p) => p.name === name)
  if (m === undefined) throw new Error(`no provider ${name} in the admin view`)
  return m
}

t.test('one of two pool members down: every request answered by the healthy one; its circuit opens, then it rejoins after the cool-down', async (t) => {
  const port = await closedPort()
  // A cool-down long enough that no stall of a loaded machine between the last request and the view half-opens it.
  const cfg = writeTestConfig((c) => { twoMembers(c, { max_tries: 2, breaker_failures: 2, breaker_cooldown_ms: 2000 }) })
  t.teardown(() => { cfg.remove() })
  const gw = await startTestGateway({ configFile: cfg.file, env: { OPENAI_B_BASE_URL: `http://127.0.0.1:${port}` }, server: { adminToken: ADMIN_TOKEN, random: () => 0.99 } })
  t.teardown(() => gw.close())

  // Member b is tried first for every request until its circuit opens (random 0.99 picks the second).
  const N = 20
  const statuses: number[] = []
  for (let i = 0; i < N; i++) {
    const res = await chat(gw)
    statuses.push(res.status)
    await res.arrayBuffer()
  }
  t.same(statuses, Array(N).fill(200), `all ${N} requests answered 200`)
  t.equal(gw.mock.calls.length, N, 'the healthy member answered every one of them')
  let view = await upstreamsOf(gw)
  const b = member(view, 'openai_b')
  t.equal(b.state, 'open', 'the dead member\'s circuit is open')
  // breaker_failures (2) tries open the circuit; afterwards each cool-down lets exactly one probe
  // through (which fails and opens it again): every other request skipped the member at once.
  t.ok(b.times_opened >= 1, `the circuit opened (${b.times_opened} times)`)
  t.equal(b.failures, 2 + (b.times_opened - 1), `failed tries: 2 to open the circuit, then one probe per cool-down (${b.failures})`)
  t.ok(b.failures < N / 2, 'most requests never tried the dead member')
  t.same(b.pools, ['openai'], 'the view names the member\'s pool')
  t.equal(member(view, 'openai').state, 'closed')

  // The member comes back on its port; after the cool-down one probe closes its circuit.
  const revived = await startMockUpstream({ port })
  t.teardown(() => revived.close())
  await sleep(2_100)
  let probed = false
  for (let i = 0; i < 40 && !probed; i++) {
    const res = await chat(gw)
    t.equal(res.status, 200)
    await res.arrayBuffer()
    probed = revived.calls.length > 0
  }
  t.ok(probed, 'a request reached the revived member after its cool-down')
  view = await upstreamsOf(gw)
  t.equal(member(view, 'openai_b').state, 'closed', 'its successful probe closed the circuit')
})

t.test('pool faults before the first byte are retried on the other member, at most max_tries', async (t) => {
  const mockB = await startMockUpstream()
  t.teardown(() => mockB.close())
  const cfg = writeTestConfig((c) => {
    twoMembers(c, { max_tries: 2, breaker_failures: 0 })
    const a = c.providers.openai
    if (a) a.timeout_ms = 300
  })
  t.teardown(() => { cfg.remove() })
  // random 0: member a (the main mock) first.
  const gw = await startTestGateway({ configFile: cfg.file, env: { OPENAI_B_BASE_URL: mockB.url }, server: { random: () => 0 } })
  t.teardown(() => gw.close())

  // A stall is retried on a stream only: a non-streamed answer's wait (answer_timeout_ms) is the
  // generation itself, never sent twice (test/upstream-answer-timeout.test.ts).
  const faults: Array<{ name: string, fault: Parameters<MockUpstream['once']>[0], stream?: boolean }> = [
    { name: '500', fault: { status: 500 } },
    { name: '502', fault: { status: 502 } },
    { name: '503', fault: { status: 503 } },
    { name: '429', fault: { status: 429, retryAfter: 3 } },
    { name: 'stall before a stream\'s first byte (past timeout_ms)', fault: { delayMs: 2000 }, stream: true }
  ]
  for (const f of faults) {
    gw.mock.reset()
    mockB.reset()
    gw.mock.once(f.fault)
    const res = f.stream === true
      ? await fetch(gw.url + CHAT, { method: 'POST', headers: { 'content-type': 'application/json', ...gw.auth }, body: chatBody('openai/gpt-4o-mini', { stream: true }) })
      : await chat(gw)
    t.equal(res.status, 200, `${f.name} on member a: answered`)
    t.equal(res.headers.get('x-gateway-model'), 'openai/gpt-4o-mini', `${f.name}: the model asked for (no fallback needed)`)
    await res.arrayBuffer()
    t.equal(gw.mock.calls.length, 1, `${f.name}: member a was tried once`)
    t.equal(mockB.calls.length, 1, `${f.name}: member b answered`)
  }

  // A 4xx the client caused is not retried: relayed with the provider's body and the contract headers.
  gw.mock.reset()
  mockB.reset()
  gw.mock.once({ status: 400 })
  const refused = await chat(gw)
  t.equal(refused.status, 400)
  t.match(await refused.text(), /Mock upstream error/, 'the provider\'s own body')
  t.equal(refused.headers.get('x-gateway-error-code'), 'REQUEST_INVALID')
  t.equal(mockB.calls.length, 0, 'a client error is not tried on another member')

  // Both members failing: max_tries (2) sends, then the model's failure.
  gw.mock.reset()
  mockB.reset()
  const both = await chat(gw, 'openai/gpt-4o-mini', { 'x-mock-status': '503', 'x-mock-retry-after': '2' })
  t.equal(both.status, 503)
  t.equal(both.headers.get('x-gateway-error-code'), 'MODEL_BUSY')
  t.equal(both.headers.get('retry-after'), '5', 'at least 5 s even when the upstream asked for 2')
  await both.arrayBuffer()
  t.equal(gw.mock.calls.length + mockB.calls.length, 2, 'two tries in all (max_tries)')
})

t.test('the primary model\'s whole pool down: the fallback answers, priced at the fallback; a fallback the key may not use is never tried', async (t) => {
  const port = await closedPort()
  const cfg = writeTestConfig((c) => {
    const a = c.providers.openai
    if (a === undefined) throw new Error('no openai provider')
    c.providers.dead = { ...a, base_url: `http://127.0.0.1:${port}` }
    c.pools.dead = [{ provider: 'dead', weight: 1 }]
    const primary = c.models.find((m) => m.id === 'openai/gpt-4o')
    if (primary === undefined) throw new Error('no openai/gpt-4o')
    primary.pool = 'dead'
    c.upstream = { breaker_failures: 0 }
  })
  t.teardown(() => { cfg.remove() })
  const gw = await startTestGateway({ configFile: cfg.file, server: { adminToken: ADMIN_TOKEN } })
  t.teardown(() => gw.close())

  const res = await chat(gw, 'openai/gpt-4o')
  t.equal(res.status, 200, 'answered by the fallback')
  t.equal(res.headers.get('x-gateway-model'), 'openai/gpt-4o-mini', 'X-Gateway-Model names the fallback')
  t.equal(res.headers.get('x-gateway-requested-model'), 'openai/gpt-4o', 'X-Gateway-Requested-Model names the model asked for')
  const requestId = res.headers.get('x-request-id') ?? ''
  await res.arrayBuffer()
  const row = await settledRow(gw, requestId)
  t.equal(row.answeredModel, 'openai/gpt-4o-mini')
  t.equal(row.billingStatus, 'BILLED')
  t.equal(gw.mock.calls[0]?.model, 'gpt-4o-mini', 'the fallback\'s upstream model was sent')

  // Same request, on the same prices: the cost of gpt-4o-mini for the same usage, not gpt-4o's.
  const direct = await chat(gw, 'openai/gpt-4o-mini')
  const directRow = await settledRow(gw, direct.headers.get('x-request-id') ?? '')
  await direct.arrayBuffer()
  t.equal(row.cost, directRow.cost, 'priced at the fallback (the same as asking for it)')

  // A key that may use only gpt-4o: its fallback is never used, nothing is forwarded.
  const created = await gw.services.store.keys.create({ accountId: gw.account.id, name: 'only 4o', allowedModels: ['openai/gpt-4o'] })
  if (!created.ok) throw new Error('key')
  const before = gw.mock.calls.length
  const denied = await fetch(gw.url + CHAT, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${created.value.plaintext}` }, body: chatBody('openai/gpt-4o') })
  t.equal(denied.status, 503)
  t.equal(denied.headers.get('x-gateway-error-code'), 'MODEL_UNAVAILABLE', 'the primary\'s failure stands')
  await denied.arrayBuffer()
  t.equal(gw.mock.calls.length, before, 'the disallowed fallback was not called')
})

t.test('a client that leaves a stream cancels its upstream at once; billed an estimate of what was produced', async (t) => {
  const gw = await startTestGateway()
  t.teardown(() => gw.close())
  const client = new OpenAI({ apiKey: gw.key, baseURL: `${gw.url}/v1`, maxRetries: 0 })
  const controller = new AbortController()
  const stream = await client.chat.completions.create(
    { model: 'openai/gpt-4o-mini', stream: true, messages: [{ role: 'user', content: 'a long answer please' }] },
    { signal: controller.signal, headers: { 'x-mock-chunks': '100', 'x-mock-chunk-delay-ms': '50' } }
  ).withResponse()
  const requestId = stream.response.headers.get('x-request-id') ?? ''
  let seen = 0
  try {
    for await (const chunk of stream.data) {
      if (chunk.choices[0]?.delta?.content) seen++
      if (seen === 3) controller.abort()
    }
  } catch {}
  // "At once" is counted on the provider's clock, not the test's: the chunks the mock produced
  // (one every 50 ms) between the client leaving and the upstream connection closing. A loaded
  // machine delays the mock's timers as much as the gateway, so the count holds where a wall
  // clock bound does not; a gateway that read on would let the mock produce all 100.
  const call = gw.mock.calls[0]
  const producedWhenLeft = call?.produced?.outputTokens ?? 0
  const leftAt = Date.now()
  await gw.mock.waitForIdle(10_000)
  const producedAfter = (call?.produced?.outputTokens ?? 0) - producedWhenLeft
  t.ok(producedAfter <= 20, `the upstream stream was closed ${producedAfter} chunks (≤ 20, 1 s of the provider's cadence) after the client left (${Date.now() - leftAt} ms on this machine)`)
  t.equal(gw.mock.activeRequests(), 0, 'no upstream stream is left open')
  t.equal(call?.completed, false, 'the provider did not finish the answer')
  const row = await settledRow(gw, requestId)
  t.equal(row.outcome, 'client_disconnected')
  t.equal(row.usageReported, false, 'the usage is marked estimated (no usage chunk arrived)')
  t.ok((row.usage?.outputTokens ?? 0) > 0, `billed for the output produced (${row.usage?.outputTokens ?? 0} tokens)`)
  t.ok((row.usage?.outputTokens ?? 1000) < 100, 'not for the 100 chunks the provider would have produced')
  t.ok((row.cost ?? 0n) > 0n, 'a charge was posted')
})

t.test('drain_on_disconnect: the upstream is read on for its usage (the old behaviour, per provider)', async (t) => {
  const cfg = writeTestConfig((c) => {
    const a = c.providers.openai
    if (a) a.drain_on_disconnect = true
    c.server.drain_timeout_ms = 10_000
  })
  t.teardown(() => { cfg.remove() })
  const gw = await startTestGateway({ configFile: cfg.file })
  t.teardown(() => gw.close())
  const controller = new AbortController()
  const res = await fetch(gw.url + CHAT, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...gw.auth, 'x-mock-chunks': '20', 'x-mock-chunk-delay-ms': '50' },
    body: chatBody('openai/gpt-4o-mini', { stream: true }),
    signal: controller.signal
  })
  const requestId = res.headers.get('x-request-id') ?? ''
  const reader = res.body?.getReader()
  await reader?.read()
  controller.abort()
  await sleep(300)
  t.equal(gw.mock.activeRequests(), 1, 'the upstream is still being read 300 ms after the client left')
  const row = await settledRow(gw, requestId)
  t.equal(row.usageReported, true, 'the upstream\'s own usage was read and billed')
  t.equal(gw.mock.calls[0]?.completed, true, 'the provider finished its answer')
})

t.test('a stream cut after k chunks: the official SDK gets an error, the bill covers only what was produced', async (t) => {
  const gw = await startTestGateway()
  t.teardown(() => gw.close())
  const client = new OpenAI({ apiKey: gw.key, baseURL: `${gw.url}/v1`, maxRetries: 0 })
  const stream = await client.chat.completions.create(
    { model: 'openai/gpt-4o-mini', stream: true, messages: [{ role: 'user', content: 'a long answer please' }] },
    { headers: { 'x-mock-chunks': '40', 'x-mock-chunk-delay-ms': '5', 'x-mock-cut-after': '4' } }
  ).withResponse()
  const requestId = stream.response.headers.get('x-request-id') ?? ''
  let text = ''
  let error: unknown = null
  try {
    for await (const chunk of stream.data) text += chunk.choices[0]?.delta?.content ?? ''
  } catch (err) {
    error = err
  }
  t.ok(error instanceof Error, `the SDK raised an error (${String(error)})`)
  const row = await settledRow(gw, requestId)
  t.equal(row.outcome, 'stream_interrupted')
  t.equal(row.usageReported, false, 'estimated: the usage chunk never came')
  const produced = gw.mock.calls[0]?.produced?.outputTokens ?? 40
  t.ok(produced < 40, `the provider produced ${produced} of 40 chunks`)
  // The estimate is one token per UTF-8 byte of the text received: at least what was relayed,
  // at most what the provider produced.
  const producedBytes = Buffer.byteLength(replyChunks('a long answer please', produced).join(''))
  const billed = row.usage?.outputTokens ?? 1000
  t.ok(billed >= Buffer.byteLength(text) && billed <= producedBytes, `billed ${billed} output tokens for ${produced} tokens produced (${producedBytes} bytes; relayed ${Buffer.byteLength(text)})`)
})

t.test('bursts on one member: 500 and 429 are retried but do not open its circuit; a 503 burst opens it after breaker_failures', async (t) => {
  const mockB = await startMockUpstream()
  t.teardown(() => mockB.close())
  const cfg = writeTestConfig((c) => { twoMembers(c, { max_tries: 2, breaker_failures: 2, breaker_cooldown_ms: 60_000 }) })
  t.teardown(() => { cfg.remove() })
  const gw = await startTestGateway({ configFile: cfg.file, env: { OPENAI_B_BASE_URL: mockB.url }, server: { random: () => 0, adminToken: ADMIN_TOKEN } })
  t.teardown(() => gw.close())
  const BURST = 5
  for (const status of [500, 429, 503]) {
    gw.mock.reset()
    mockB.reset()
    for (let i = 0; i < BURST; i++) gw.mock.once({ status })
    const answered: number[] = []
    for (let i = 0; i < BURST; i++) {
      const res = await chat(gw)
      answered.push(res.status)
      await res.arrayBuffer()
    }
    t.same(answered, Array(BURST).fill(200), `a burst of ${BURST} × ${status} on member a: every request answered`)
    t.equal(mockB.calls.length, BURST, `${status}: member b answered all ${BURST}`)
    if (status === 503) {
      t.equal(gw.mock.calls.length, 2, '503 burst: member a was tried breaker_failures (2) times, then skipped')
      t.equal(member(await upstreamsOf(gw), 'openai').state, 'open', 'its circuit is open')
    } else {
      t.equal(gw.mock.calls.length, BURST, `${status} burst: member a was tried every time (one request can provoke a ${status})`)
      t.equal(member(await upstreamsOf(gw), 'openai').state, 'closed', 'its circuit stays closed')
    }
  }
})

t.test('slow drip under the idle bound completes; a stall after the stream began (chunk gap past body_timeout_ms) ends in an error frame', async (t) => {
  const cfg = writeTestConfig((c) => {
    const a = c.providers.openai
    if (a) a.body_timeout_ms = 400
  })
  t.teardown(() => { cfg.remove() })
  const gw = await startTestGateway({ configFile: cfg.file })
  t.teardown(() => gw.close())
  const stream = async (delayMs: number): Promise<{ text: string, requestId: string }> => {
    const res = await fetch(gw.url + CHAT, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...gw.auth, 'x-mock-chunks': '6', 'x-mock-chunk-delay-ms': String(delayMs) },
      body: chatBody('openai/gpt-4o-mini', { stream: true })
    })
    t.equal(res.status, 200)
    return { text: await res.text(), requestId: res.headers.get('x-request-id') ?? '' }
  }
  const drip = await stream(150)
  t.match(drip.text, /data: \[DONE\]/, 'a drip of 150 ms per chunk (bound 400 ms) is relayed to its end')
  const dripRow = await settledRow(gw, drip.requestId)
  t.equal(dripRow.outcome, 'completed')
  t.equal(dripRow.usageReported, true)

  gw.mock.reset()
  const stalled = await stream(1500)
  t.match(stalled.text, /event: error/, 'a chunk gap of 1.5 s (bound 400 ms) ends the stream with an error frame')
  t.match(stalled.text, /PROVIDER_STREAM_INTERRUPTED/)
  const row = await settledRow(gw, stalled.requestId)
  t.equal(row.outcome, 'stream_interrupted')
  t.equal(row.errorCode, 'PROVIDER_STREAM_INTERRUPTED')
  t.equal(gw.mock.calls[0]?.completed, false, 'the provider did not finish')
  t.equal(row.usageReported, false, 'no usage arrived: estimated')
  t.equal(row.usage?.outputTokens ?? 0, 0, 'no content chunk came before the stall: no output billed')
  t.comment(`stalled stream: billing ${row.billingStatus}, cost ${String(row.cost)}`)
})

t.test('active health checks open a dead member\'s circuit before any request, and close it when the member answers again', { timeout: 60_000 }, async (t) => {
  const port = await closedPort()
  const cfg = writeTestConfig((c) => {
    twoMembers(c, { breaker_failures: 2, breaker_cooldown_ms: 60_000, health_check_interval_ms: 100 })
    const b = c.providers.openai_b
    if (b) b.health_check_path = '/health'
  })
  t.teardown(() => { cfg.remove() })
  const gw = await startTestGateway({ configFile: cfg.file, env: { OPENAI_B_BASE_URL: `http://127.0.0.1:${port}` }, server: { adminToken: ADMIN_TOKEN, random: () => 0.99 } })
  t.teardown(() => gw.close())
  const waitFor = async (what: string, cond: (v: UpstreamsView) => boolean): Promise<UpstreamsView> => {
    for (let i = 0; i < 50; i++) {
      const v = await upstreamsOf(gw)
      if (cond(v)) return v
      await sleep(100)
    }
    throw new Error(`timed out waiting for ${what}`)
  }
  const down = await waitFor('the checks to open b', (v) => member(v, 'openai_b').state === 'open')
  t.equal(member(down, 'openai_b').state, 'open', 'the checks opened the dead member\'s circuit')
  t.equal(member(down, 'openai').failures, 0, 'a member without a check path is not checked')
  const res = await chat(gw)
  t.equal(res.status, 200)
  await res.arrayBuffer()
  t.equal(gw.mock.calls.length, 1, 'the request went to the healthy member at once (b skipped, not tried)')

  const revived = await startMockUpstream({ port })
  t.teardown(() => revived.close())
  const up = await waitFor('the checks to close b', (v) => member(v, 'openai_b').state === 'closed')
  t.equal(member(up, 'openai_b').state, 'closed', 'a successful check closed the circuit long before its 60 s cool-down')
  const again = await chat(gw)
  t.equal(again.status, 200)
  await again.arrayBuffer()
  t.equal(revived.calls.filter((c) => c.path.startsWith('/v1/chat')).length, 1, 'b serves requests again')
})
