// Money: "a client that disconnects is billed for what the upstream actually produced". 200
// streaming clients (chat completions and messages) leave after k content chunks (k seeded,
// 1..10) while the provider goes on to 20: within the drain window the gateway reads every
// upstream to its end, so the charge is the provider's own usage, priced by this test from
// gateway.yaml and rounded up once per request. With a short drain window the upstream is cut:
// the charge is what the gateway metered until then (estimated), and still no hold stays open.
import { estimateUsage } from '../plugins/concerns/metering/estimate.js'
import t, { type Test } from 'tap'
import type { RecordedCall } from './fixtures/mock-upstream.js'
import { startTestGateway, type TestGateway } from './helpers/gateway.js'
import {
  decimal, expectedCost, ledgerState, nanos, priceOf, seededRandom, waitForRows, type TestPrice
} from './helpers/billing.js'
import { writeTestConfig, type RawConfig } from './helpers/test-config.js'
import { sseEvents } from './helpers/wire.js'

/** Both providers of these tests read a left client's upstream on for its usage (drain_on_disconnect). */
function drainOn (c: RawConfig): void {
  for (const name of ['openai', 'anthropic']) {
    const p = c.providers[name]
    if (p === undefined) throw new Error(`no provider ${name}`)
    p.drain_on_disconnect = true
  }
}

const SEED = Number(process.env.BILLING_SEED ?? 20240611)
const CREDIT = '100.00'

type Family = 'chat' | 'messages'

const MODELS: Record<Family, string> = { chat: 'openai/gpt-4o', messages: 'anthropic/claude-sonnet-4' }
const PRICES: Record<Family, TestPrice> = { chat: priceOf(MODELS.chat), messages: priceOf(MODELS.messages) }

function request (gw: TestGateway, family: Family, prompt: string, headers: Record<string, string>, signal: AbortSignal): Promise<Response> {
  const [path, auth, body] = family === 'chat'
    ? ['/v1/chat/completions', { authorization: `Bearer ${gw.key}` }, { model: MODELS.chat, stream: true, messages: [{ role: 'user', content: prompt }] }]
    : ['/v1/messages', { 'x-api-key': gw.key }, { model: MODELS.messages, max_tokens: 1000, stream: true, messages: [{ role: 'user', content: prompt }] }]
  return fetch(gw.url + path, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...auth, ...headers },
    body: JSON.stringify(body),
    signal
  })
}

/** The generated text a stream event carries, or null when it carries none. */
function contentOf (family: Family, event: { event: string | null, data: string }): string | null {
  if (event.data === '' || event.data === '[DONE]') return null
  const json = JSON.parse(event.data) as { type?: string, choices?: Array<{ delta?: { content?: string } }>, delta?: { type?: string, text?: string } }
  if (family === 'chat') {
    const text = json.choices?.[0]?.delta?.content
    return typeof text === 'string' && text !== '' ? text : null
  }
  return json.type === 'content_block_delta' && typeof json.delta?.text === 'string' ? json.delta.text : null
}

/** The text content of every complete event in an SSE byte string. */
function textOf (family: Family, sse: Buffer | undefined): string {
  if (sse === undefined) return ''
  const text = sse.toString('utf8')
  const complete = text.slice(0, text.lastIndexOf('\n\n') + 2)
  return sseEvents(complete).map((e) => contentOf(family, e) ?? '').join('')
}

interface Client {
  family: Family
  prompt: string
  k: number
  requestId: string
  /** The text of the k chunks this client read before it left. */
  seen: string
  chunksSeen: number
}

/** Reads k content chunks of the stream, then disconnects. */
async function leaveAfter (gw: TestGateway, family: Family, prompt: string, k: number, headers: Record<string, string>): Promise<Client> {
  const controller = new AbortController()
  const res = await request(gw, family, prompt, headers, controller.signal)
  if (res.status !== 200 || res.body === null) throw new Error(`stream answered ${res.status}: ${await res.text()}`)
  const requestId = res.headers.get('x-request-id') ?? ''
  const reader = res.body.getReader()
  const decoder = new TextDecoder()
  let buffered = ''
  let seen = ''
  let chunksSeen = 0
  while (chunksSeen < k) {
    const { done, value } = await reader.read()
    if (done) throw new Error(`stream ${requestId} ended after ${chunksSeen} of ${k} chunks`)
    buffered += decoder.decode(value, { stream: true })
    const end = buffered.lastIndexOf('\n\n')
    if (end === -1) continue
    for (const e of sseEvents(buffered.slice(0, end + 2))) {
      const text = contentOf(family, e)
      if (text === null || chunksSeen >= k) continue
      seen += text
      chunksSeen++
    }
    buffered = buffered.slice(end + 2)
  }
  controller.abort()
  await reader.cancel().catch(() => {})
  return { family, prompt, k, requestId, seen, chunksSeen }
}

function promptOf (call: RecordedCall): string {
  const json = call.json as { messages?: Array<{ content?: unknown }> } | undefined
  const content = json?.messages?.[0]?.content
  return typeof content === 'string' ? content : ''
}

async function checkLedger (t: Test, gw: TestGateway, expectedCharged: bigint, rowCostSum: bigint): Promise<void> {
  const ledger = await ledgerState(gw)
  t.equal(ledger.charged, expectedCharged, `ledger charges total ${decimal(expectedCharged)}`)
  t.equal(rowCostSum, expectedCharged, 'request log costs total the same')
  t.equal(ledger.balance, nanos(CREDIT) - expectedCharged, 'balance = credit − charges')
  t.equal(ledger.held, 0n, 'nothing held')
  t.equal(ledger.openHolds, 0, 'no open hold')
  t.equal(ledger.entriesSum, ledger.balance, 'ledger entries sum to the balance')
}

t.test('200 clients leave mid-stream; the drain window lets every upstream finish; billed == produced', async (t) => {
  // The drain is a per-provider choice (providers.*.drain_on_disconnect, off by default: a client
  // that leaves cancels its upstream, see test/upstream-resilience.test.ts).
  const cfg = writeTestConfig((c) => { drainOn(c) })
  t.teardown(cfg.remove)
  const gw = await startTestGateway({ configFile: cfg.file, credit: CREDIT })
  t.teardown(() => gw.close())
  t.ok(gw.config.server.drain_timeout_ms >= 10_000, `drain window ${gw.config.server.drain_timeout_ms} ms covers the rest of each stream`)
  const random = seededRandom(SEED)
  t.comment(`seed ${SEED} (BILLING_SEED replays a run)`)
  const CLIENTS = 200
  const CHUNKS = 20
  const plan = Array.from({ length: CLIENTS }, (_, i) => ({
    family: (i % 4 === 3 ? 'messages' : 'chat') as Family,
    prompt: `client ${i} streams a few words and hangs up early`,
    k: 1 + Math.floor(random() * 10)
  }))
  const started = performance.now()
  const clients = await Promise.all(plan.map(async (p) => await leaveAfter(gw, p.family, p.prompt, p.k, {
    'x-mock-chunks': String(CHUNKS), 'x-mock-chunk-delay-ms': '25'
  })))
  await gw.mock.waitForIdle(30_000)
  const rows = await waitForRows([gw], CLIENTS)
  t.comment(`${CLIENTS} streams (${plan.filter((p) => p.family === 'messages').length} messages-family) left after k = 1..10 chunks; all settled in ${(performance.now() - started).toFixed(0)} ms`)

  t.equal(gw.mock.calls.length, CLIENTS, 'one upstream call per client')
  t.ok(clients.every((c) => c.chunksSeen === c.k), 'every client read exactly its k chunks before leaving')
  const calls = new Map(gw.mock.calls.map((c) => [promptOf(c), c]))
  const byRequest = new Map(rows.map((r) => [r.requestId, r]))
  let expectedTotal = 0n
  let rowTotal = 0n
  const wrong: string[] = []
  for (const c of clients) {
    const call = calls.get(c.prompt)
    const row = byRequest.get(c.requestId)
    if (call?.produced === undefined || row === undefined) {
      wrong.push(`${c.requestId}: no call or no row`)
      continue
    }
    // What the provider produced, priced here: every stream was read to its end.
    const expected = expectedCost(PRICES[c.family], { inputTokens: call.produced.inputTokens, outputTokens: call.produced.outputTokens })
    expectedTotal += expected
    rowTotal += row.cost ?? 0n
    const problems = [
      call.completed ? null : 'upstream not read to its end',
      call.produced.outputTokens === CHUNKS ? null : `produced ${call.produced.outputTokens} tokens`,
      row.outcome === 'client_disconnected' ? null : `outcome ${row.outcome}`,
      row.errorCode === 'REQUEST_CLIENT_DISCONNECTED' ? null : `error code ${String(row.errorCode)}`,
      row.billingStatus === 'BILLED' ? null : `billing ${row.billingStatus}`,
      row.usageReported === true ? null : 'usage not reported',
      row.usage?.outputTokens === call.produced.outputTokens && row.usage.inputTokens === call.produced.inputTokens ? null : `usage ${JSON.stringify(row.usage)}`,
      row.cost === expected ? null : `cost ${String(row.cost)} != ${expected}`,
      row.answeredModel === MODELS[c.family] ? null : `answered ${String(row.answeredModel)}`
    ].filter((p) => p !== null)
    if (problems.length > 0) wrong.push(`${c.family} ${c.requestId}: ${problems.join(', ')}`)
  }
  t.same(wrong, [], 'every request: upstream read to the end, row client_disconnected, BILLED at the produced usage')
  t.equal(rows.length, CLIENTS, 'one request log row per client')
  t.ok(rows.every((r) => r.outcome === 'client_disconnected'), 'every row: outcome client_disconnected')
  t.comment(`billed ${decimal(expectedTotal)} for ${CLIENTS} disconnected streams`)
  await checkLedger(t, gw, expectedTotal, rowTotal)
})

t.test('short drain window: the upstream is cut, the charge is what was metered, no hold stays open', async (t) => {
  const DRAIN_MS = 100
  const cfg = writeTestConfig((c) => {
    c.server.drain_timeout_ms = DRAIN_MS
    drainOn(c)
  })
  t.teardown(cfg.remove)
  const gw = await startTestGateway({ configFile: cfg.file, credit: CREDIT })
  t.teardown(() => gw.close())
  t.equal(gw.config.server.drain_timeout_ms, DRAIN_MS, 'test config: short drain window')
  const random = seededRandom(SEED + 1)
  const CHUNKS = 40
  const plan = Array.from({ length: 20 }, (_, i) => ({
    family: (i % 2 === 1 ? 'messages' : 'chat') as Family,
    prompt: `short drain client ${i} — déjà vu ✓ leaves early`,
    k: 1 + Math.floor(random() * 5)
  }))
  const clients = await Promise.all(plan.map(async (p) => await leaveAfter(gw, p.family, p.prompt, p.k, {
    'x-mock-chunks': String(CHUNKS), 'x-mock-chunk-delay-ms': '50'
  })))
  await gw.mock.waitForIdle(30_000)
  const rows = await waitForRows([gw], plan.length)
  const calls = new Map(gw.mock.calls.map((c) => [promptOf(c), c]))
  const byRequest = new Map(rows.map((r) => [r.requestId, r]))
  let metered = 0n
  let rowTotal = 0n
  const wrong: string[] = []
  for (const c of clients) {
    const call = calls.get(c.prompt)
    const row = byRequest.get(c.requestId)
    if (call?.produced === undefined || row?.usage === null || row?.usage === undefined) {
      wrong.push(`${c.requestId}: no call or no row usage`)
      continue
    }
    // The gateway saw at least what the client read and at most what the provider sent (one
    // token per UTF-8 byte of it).
    const low = Buffer.byteLength(c.seen)
    const high = Buffer.byteLength(textOf(c.family, call.response))
    const input = c.family === 'chat'
      ? estimateUsage('chat', { json: { model: MODELS.chat, stream: true, messages: [{ role: 'user', content: c.prompt }] } }, { upstreamModel: 'gpt-4o' }, 0).inputTokens // no usage chunk came: estimated from the request
      : call.produced.inputTokens // message_start reported the input before the cut
    const charge = expectedCost(PRICES[c.family], { inputTokens: row.usage.inputTokens, outputTokens: row.usage.outputTokens })
    metered += charge
    rowTotal += row.cost ?? 0n
    const problems = [
      !call.completed && call.clientAborted ? null : 'upstream not cut by the gateway',
      call.produced.outputTokens < CHUNKS ? null : 'the provider finished',
      row.outcome === 'client_disconnected' ? null : `outcome ${row.outcome}`,
      row.usageReported === false ? null : 'usage marked reported',
      row.usage.inputTokens === input ? null : `input ${row.usage.inputTokens} != ${input}`,
      row.usage.outputTokens >= low && row.usage.outputTokens <= high ? null : `output ${row.usage.outputTokens} not in [${low}, ${high}]`,
      row.cost === charge ? null : `cost ${String(row.cost)} != metered ${charge}`,
      row.cost !== null && row.held !== null && row.cost <= row.held ? null : 'cost above hold',
      row.billingStatus === 'BILLED' ? null : `billing ${row.billingStatus}`
    ].filter((p) => p !== null)
    if (problems.length > 0) wrong.push(`${c.family} ${c.requestId}: ${problems.join(', ')}`)
  }
  t.same(wrong, [], `every upstream cut ${DRAIN_MS} ms after its client left; charged the metered, estimated usage`)
  const producedTokens = gw.mock.calls.reduce((sum, c) => sum + (c.produced?.outputTokens ?? 0), 0)
  t.comment(`${plan.length} streams cut after their drain window: the provider sent ${producedTokens} of ${plan.length * CHUNKS} output tokens; billed ${decimal(metered)}`)
  await checkLedger(t, gw, metered, rowTotal)
})
