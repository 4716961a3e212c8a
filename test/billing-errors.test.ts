// Errors and billing: a refused request or an upstream failure bills nothing and leaves no hold;
// MODEL_REQUIRES_TOPUP until the account's first top-up (a grant does not count, but granted
// credit then pays); a fallback answer is priced at the model that answered; a stream that
// breaks ends with an `event: error` frame whose billing status says whether what was produced
// was charged; and a hold that expires while its request is still running is released by the
// reaper, after which the late settle posts nothing.
import { estimateUsage } from '../plugins/concerns/metering/estimate.js'
import t, { type Test } from 'tap'
import { replyChunks } from './fixtures/mock-upstream.js'
import { startTestGateway, type Backend, type TestGateway } from './helpers/gateway.js'
import {
  adminClient, codePoints, decimal, expectedCost, ledgerState, nanos, priceOf, settledRow, sleep, tokensFromChars
} from './helpers/billing.js'
import { modelOf, readRepoConfig, writeTestConfig } from './helpers/test-config.js'
import { sseEvents } from './helpers/wire.js'

interface ErrorBody {
  error: { code: string, billing: { status: string }, retry: { strategy: string }, type?: string }
}

async function post (gw: TestGateway, path: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return await fetch(gw.url + path, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...gw.auth, ...headers },
    body: JSON.stringify(body)
  })
}

const chat = (model: string, content: string, extra: Record<string, unknown> = {}): Record<string, unknown> =>
  ({ model, messages: [{ role: 'user', content }], ...extra })

/** Nothing billed and nothing held: balance as before, no charge, no open hold, entries add up. */
async function nothingBilled (t: Test, gw: TestGateway, balanceBefore: bigint, chargesBefore: number): Promise<void> {
  const ledger = await ledgerState(gw)
  t.equal(ledger.balance, balanceBefore, 'balance unchanged')
  t.equal(ledger.charges.length, chargesBefore, 'no charge posted')
  t.equal(ledger.held, 0n, 'nothing held')
  t.equal(ledger.openHolds, 0, 'no open hold')
  t.equal(ledger.entriesSum, ledger.balance, 'entries sum to the balance')
}

t.test('refused requests and upstream failures bill nothing and leave no hold', async (t) => {
  const gw = await startTestGateway({ credit: '10.00' })
  t.teardown(() => gw.close())
  t.beforeEach(() => gw.mock.reset())

  t.test('unknown model: 404 MODEL_NOT_FOUND, the provider is not called', async (t) => {
    const before = await ledgerState(gw)
    const res = await post(gw, '/v1/chat/completions', chat('openai/no-such-model', 'hello'))
    const body = await res.json() as ErrorBody
    t.equal(res.status, 404)
    t.equal(body.error.code, 'MODEL_NOT_FOUND')
    t.equal(body.error.billing.status, 'NOT_BILLED')
    t.equal(res.headers.get('x-gateway-billed'), 'false')
    t.equal(gw.mock.calls.length, 0, 'the provider was not called')
    const row = await settledRow(gw, res.headers.get('x-request-id') ?? '')
    t.match(row, { status: 404, outcome: 'refused', errorCode: 'MODEL_NOT_FOUND', billingStatus: 'NOT_BILLED', holdId: null, cost: null })
    await nothingBilled(t, gw, before.balance, before.charges.length)
  })

  t.test('upstream 500: 502 UPSTREAM_ERROR, X-Gateway-Billed false, the hold released', async (t) => {
    const before = await ledgerState(gw)
    // gpt-4o-mini has no fallback: the provider's 500 is the answer.
    const res = await post(gw, '/v1/chat/completions', chat('openai/gpt-4o-mini', 'hello'), { 'x-mock-status': '500' })
    const body = await res.json() as ErrorBody
    t.equal(res.status, 502)
    t.equal(body.error.code, 'UPSTREAM_ERROR')
    t.equal(body.error.billing.status, 'NOT_BILLED')
    t.equal(res.headers.get('x-gateway-billed'), 'false')
    t.equal(res.headers.get('x-gateway-error-code'), 'UPSTREAM_ERROR')
    t.equal(gw.mock.calls.length, 1, 'the provider was called once')
    const row = await settledRow(gw, res.headers.get('x-request-id') ?? '')
    t.match(row, { status: 502, outcome: 'upstream_error', errorCode: 'UPSTREAM_ERROR', billingStatus: 'NOT_BILLED', cost: 0n, postingId: null })
    t.ok(row.holdId !== null && row.held !== null && row.held > 0n, 'a hold had been placed before the call')
    await nothingBilled(t, gw, before.balance, before.charges.length)
  })

  t.test('upstream 400: passed through, X-Gateway-Billed false, the hold released', async (t) => {
    const before = await ledgerState(gw)
    const res = await post(gw, '/v1/chat/completions', chat('openai/gpt-4o-mini', 'hello'), { 'x-mock-status': '400' })
    const body = await res.json() as { error: { message: string, code?: unknown } }
    t.equal(res.status, 400, 'the provider status is passed through')
    t.equal(typeof body.error.message, 'string', 'the provider error body is passed through')
    t.equal(res.headers.get('x-gateway-billed'), 'false')
    const row = await settledRow(gw, res.headers.get('x-request-id') ?? '')
    t.match(row, { status: 400, billingStatus: 'NOT_BILLED', cost: 0n, postingId: null, answeredModel: 'openai/gpt-4o-mini' })
    await nothingBilled(t, gw, before.balance, before.charges.length)
  })
})

t.test('MODEL_REQUIRES_TOPUP: a grant does not unlock the model, a top-up does, and granted credit then pays', async (t) => {
  const MODEL = 'openai/gpt-image-1-edit'
  const cfg = writeTestConfig((c) => { modelOf(c, MODEL).requires_topup = true })
  t.teardown(cfg.remove)
  const token = 'billing-admin-token-0123456789abcdef'
  const gw = await startTestGateway({ configFile: cfg.file, credit: '0', server: { adminToken: token } })
  t.teardown(() => gw.close())
  const admin = adminClient(gw, token)
  // One image at a named quality and size: held and charged at that image_prices entry.
  const tier = { quality: 'medium', size: '1024x1024' }
  const edit = async (): Promise<Response> => await post(gw, '/v1/images/edits', { model: MODEL, prompt: 'a hat', images: [{ image_url: 'https://example.test/cat.png' }], ...tier })
  const wallet = async (): Promise<{ balance: string }> => (await admin<{ balance: string }>('GET', `/accounts/${gw.account.id}/wallet`)).json

  const refused = async (t: Test, why: string): Promise<void> => {
    const res = await edit()
    const body = await res.json() as ErrorBody
    t.equal(res.status, 403, why)
    t.equal(body.error.code, 'MODEL_REQUIRES_TOPUP')
    t.equal(body.error.retry.strategy, 'TOP_UP')
    t.equal(body.error.billing.status, 'NOT_BILLED')
    t.equal(res.headers.get('x-gateway-billed'), 'false')
  }

  await refused(t, 'never topped up, empty wallet')
  const granted = await admin('POST', `/accounts/${gw.account.id}/credits`, { amount: '1.00', kind: 'grant' })
  t.equal(granted.status, 200, 'grant credited')
  t.equal((await wallet()).balance, '1.00')
  await refused(t, 'a grant is not a top-up')
  t.equal(gw.mock.calls.length, 0, 'the provider was never called')

  // Granted credit is spendable on models that need no top-up.
  const prompt = 'paid from the grant'
  const ok = await post(gw, '/v1/chat/completions', chat('openai/gpt-4o-mini', prompt))
  t.equal(ok.status, 200, 'granted credit pays for a model without requires_topup')
  const chatRow = await settledRow(gw, ok.headers.get('x-request-id') ?? '')
  const chatCost = expectedCost(priceOf('openai/gpt-4o-mini'), { inputTokens: tokensFromChars(codePoints(prompt)), outputTokens: 5 })
  t.equal(chatRow.cost, chatCost)

  // A top-up smaller than one edit: the edit can only be paid with the granted credit.
  const toppedUp = await admin('POST', `/accounts/${gw.account.id}/credits`, { amount: '0.01', kind: 'topup' })
  t.equal(toppedUp.status, 200, 'top-up credited')
  const account = await admin<{ topped_up: boolean }>('GET', `/accounts/${gw.account.id}`)
  t.equal(account.json.topped_up, true, 'the account has topped up')
  const editCost = expectedCost(priceOf(MODEL), { images: 1, imageTier: tier })
  t.ok(editCost > nanos('0.01'), 'one edit costs more than the top-up')
  const res = await edit()
  t.equal(res.status, 200, 'the top-up unlocked the model')
  const row = await settledRow(gw, res.headers.get('x-request-id') ?? '')
  t.match(row, { billingStatus: 'BILLED', cost: editCost, held: editCost, answeredModel: MODEL })
  t.same(row.usage?.imageTier, tier, 'the answer rendered the tier asked')
  const expected = nanos('1.00') + nanos('0.01') - chatCost - editCost
  t.equal(nanos((await wallet()).balance), expected, `admin wallet: ${decimal(expected)} = grant + top-up − chat − edit`)
  const ledger = await ledgerState(gw)
  t.equal(ledger.balance, expected)
  t.equal(ledger.openHolds, 0, 'no open hold')
  t.equal(ledger.entriesSum, ledger.balance, 'entries sum to the balance')
  t.same(ledger.entries.filter((e) => e.kind !== 'charge').map((e) => [e.kind, e.amount]).sort(), [['grant', nanos('1.00')], ['topup', nanos('0.01')]], 'one grant and one top-up entry')
})

t.test('a fallback answer is priced at the model that answered', async (t) => {
  const gw = await startTestGateway({ credit: '10.00' })
  t.teardown(() => gw.close())
  const primary = modelOf(readRepoConfig(), 'openai/gpt-4o')
  t.same(primary.fallbacks, ['openai/gpt-4o-mini'], 'gpt-4o falls back to gpt-4o-mini')
  const before = await ledgerState(gw)
  gw.mock.once({ status: 500 }) // the primary's upstream fails before its first byte
  const prompt = 'who answers this one?'
  const res = await post(gw, '/v1/chat/completions', chat('openai/gpt-4o', prompt))
  t.equal(res.status, 200)
  await res.json()
  t.equal(res.headers.get('x-gateway-model'), 'openai/gpt-4o-mini')
  t.equal(res.headers.get('x-gateway-requested-model'), 'openai/gpt-4o')
  t.same(gw.mock.calls.map((c) => [c.model, c.status]), [['gpt-4o', 500], ['gpt-4o-mini', 200]])
  const units = { inputTokens: tokensFromChars(codePoints(prompt)), outputTokens: 5 }
  const cost = expectedCost(priceOf('openai/gpt-4o-mini'), units)
  t.not(cost, expectedCost(priceOf('openai/gpt-4o'), units), 'the two models price this differently')
  const row = await settledRow(gw, res.headers.get('x-request-id') ?? '')
  t.match(row, { requestedModel: 'openai/gpt-4o', answeredModel: 'openai/gpt-4o-mini', billingStatus: 'BILLED', cost })
  const after = await ledgerState(gw)
  t.equal(before.balance - after.balance, cost, 'the wallet paid the fallback\'s price')
  t.equal(after.charges.length - before.charges.length, 1, 'one charge (the primary\'s hold was released)')
  t.equal(after.charges.find((e) => e.holdId === row.holdId)?.amount, -cost)
  t.equal(after.openHolds, 0, 'no open hold')
  t.equal(after.entriesSum, after.balance, 'entries sum to the balance')
})

interface StreamCase { family: 'chat' | 'messages', model: string, path: string, body: (prompt: string) => Record<string, unknown> }

const STREAMS: StreamCase[] = [
  { family: 'chat', model: 'openai/gpt-4o', path: '/v1/chat/completions', body: (p) => chat('openai/gpt-4o', p, { stream: true }) },
  { family: 'messages', model: 'anthropic/claude-sonnet-4', path: '/v1/messages', body: (p) => chat('anthropic/claude-sonnet-4', p, { stream: true, max_tokens: 100 }) }
]

t.test('a broken stream ends with an error frame that tells whether it was billed', async (t) => {
  const gw = await startTestGateway({ credit: '10.00' })
  t.teardown(() => gw.close())
  t.beforeEach(() => gw.mock.reset())

  for (const s of STREAMS) {
    t.test(`${s.family}: cut after 3 chunks → BILLED for what was produced`, async (t) => {
      const before = await ledgerState(gw)
      const prompt = 'this stream will break after three words'
      const res = await post(gw, s.path, s.body(prompt), { 'x-mock-chunks': '10', 'x-mock-cut-after': '3', ...(s.family === 'messages' ? { 'x-api-key': gw.key } : {}) })
      t.equal(res.status, 200, 'the stream had started')
      const events = sseEvents(await res.text())
      const last = events.at(-1)
      t.equal(last?.event, 'error', 'the stream ends with an event: error frame')
      const frame = JSON.parse(last?.data ?? '{}') as ErrorBody
      t.equal(frame.error.code, 'PROVIDER_STREAM_INTERRUPTED')
      t.equal(frame.error.billing.status, 'BILLED', 'the frame says BILLED')
      const call = gw.mock.calls[0]
      t.equal(call?.produced?.outputTokens, 3, 'the provider produced 3 chunks before the cut')
      const text = replyChunks(prompt, 3).join('')
      const row = await settledRow(gw, res.headers.get('x-request-id') ?? '')
      // No final usage came: the output is estimated from the text produced (one token per UTF-8
      // byte); the input from the request (chat, gpt-4o's tokenizer) or from message_start, which
      // the messages family sends first.
      const estimate = estimateUsage('chat', { json: s.body(prompt) }, { upstreamModel: 'gpt-4o' }, Buffer.byteLength(text))
      const units = { inputTokens: s.family === 'chat' ? estimate.inputTokens : call?.produced?.inputTokens ?? -1, outputTokens: Buffer.byteLength(text) }
      const cost = expectedCost(priceOf(s.model), units)
      t.match(row, { outcome: 'stream_interrupted', errorCode: 'PROVIDER_STREAM_INTERRUPTED', billingStatus: 'BILLED', usageReported: false, cost, usage: units })
      const after = await ledgerState(gw)
      t.equal(before.balance - after.balance, cost, 'the wallet paid what was produced')
      t.equal(after.openHolds, 0, 'no open hold')
      t.equal(after.entriesSum, after.balance, 'entries sum to the balance')
    })

    t.test(`${s.family}: cut before any content → NOT_BILLED`, async (t) => {
      const before = await ledgerState(gw)
      const res = await post(gw, s.path, s.body('this stream breaks at once'), { 'x-mock-chunks': '10', 'x-mock-cut-after': '0', ...(s.family === 'messages' ? { 'x-api-key': gw.key } : {}) })
      t.equal(res.status, 200, 'the stream had started')
      const events = sseEvents(await res.text())
      const last = events.at(-1)
      t.equal(last?.event, 'error', 'the stream ends with an event: error frame')
      const frame = JSON.parse(last?.data ?? '{}') as ErrorBody
      t.equal(frame.error.code, 'PROVIDER_STREAM_INTERRUPTED')
      t.equal(frame.error.billing.status, 'NOT_BILLED', 'the frame says NOT_BILLED')
      t.equal(gw.mock.calls[0]?.produced?.outputTokens, 0, 'the provider produced nothing')
      const row = await settledRow(gw, res.headers.get('x-request-id') ?? '')
      t.match(row, { outcome: 'stream_interrupted', billingStatus: 'NOT_BILLED', cost: 0n, postingId: null })
      await nothingBilled(t, gw, before.balance, before.charges.length)
    })
  }
})

for (const backend of ['sqlite', 'pg'] as Backend[]) {
  t.test(`${backend}: a hold outlives its TTL while its request runs (renewed), and the late settle posts`, async (t) => {
    const TTL_MS = 1000
    const cfg = writeTestConfig((c) => {
      const wallet = c.wallet as Record<string, unknown>
      wallet.hold_ttl_ms = TTL_MS
      wallet.reaper_interval_ms = 100
    })
    t.teardown(cfg.remove)
    const gw = await startTestGateway({ backend, configFile: cfg.file, credit: '10.00' })
    t.teardown(() => gw.close())
    const before = await ledgerState(gw)
    const answer = post(gw, '/v1/chat/completions', chat('openai/gpt-4o', 'a slow provider'), { 'x-mock-delay-ms': String(TTL_MS * 2.5) })
    await gw.mock.waitForCalls(1)
    const held = await ledgerState(gw)
    t.equal(held.openHolds, 1, 'the request holds its worst case while the provider works')
    t.ok(held.held > 0n)
    await sleep(TTL_MS + 700)
    const renewed = await ledgerState(gw)
    t.equal(renewed.openHolds, 1, 'past its first expiry the hold is still open: renewed while the request runs, not reaped')
    t.equal(renewed.held, held.held, 'still holding the worst case')
    const res = await answer
    t.equal(res.status, 200, 'the provider answered after the first TTL')
    t.equal(res.headers.get('x-gateway-billed'), 'pending')
    await res.json()
    const row = await settledRow(gw, res.headers.get('x-request-id') ?? '')
    t.match(row, { outcome: 'completed', billingStatus: 'BILLED' })
    t.ok(row.cost !== null && row.cost > 0n, 'charged')
    const after = await ledgerState(gw)
    t.equal(after.openHolds, 0)
    t.equal(after.charges.length, before.charges.length + 1, 'one charge posted')
    t.equal(after.balance, before.balance - (row.cost ?? 0n))
    t.comment('A hold whose instance stops renewing it (a crash) still expires and is reaped: see store-ledger "renew never revives an expired hold".')
  })
}
