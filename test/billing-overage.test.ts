// Media sent by URL and charges above the hold, through the running gateway on SQLite and
// PostgreSQL, with the OpenAI SDK as the client. The regression: a 258-byte chat body with two
// image URLs was held 0.000655, the upstream reported 200,000 input tokens, and the charge was
// silently capped at the hold. Now the hold counts the model's context window as input (media by
// URL is input the body does not bound) plus the two URL items at the catalogue's
// `url_media_item` price, and what the upstream reports above the hold (here more than the
// context window: a provider fault) is posted down to the account's bound (wallet floor − tier
// overdraft), never below: the rest is the operator's unrecovered loss, on the request log row,
// the charge entry, a metric and one log line, and the account refuses requests until it is
// topped up (issue 25).
import { Writable } from 'node:stream'
import { OpenAI } from 'openai'
import t from 'tap'
import { adminClient, expectedCost, ledgerState, nanos, priceOf, settledRow } from './helpers/billing.js'
import { capturingFetch } from './helpers/capture-fetch.js'
import { startTestGateway, UNREACHED_LIMIT, type Backend } from './helpers/gateway.js'
import { modelOf, readRepoConfig } from './helpers/test-config.js'

const MODEL = 'openai/gpt-4o'
const ADMIN_TOKEN = 'admin-token-for-overage-tests-0123'
/** The body of the issue: 258 bytes as the SDK sends it, two image URLs, one output token. */
const BODY = {
  model: MODEL,
  max_tokens: 1,
  messages: [{
    role: 'user' as const,
    content: [
      { type: 'text' as const, text: 'Compare all' },
      { type: 'image_url' as const, image_url: { url: 'https://example.test/a.jpg' } },
      { type: 'image_url' as const, image_url: { url: 'https://example.test/b.jpg' } }
    ]
  }]
}
/** What the provider counted for the two fetched images (the mock is told to report it): above the context window. */
const MEDIA_INPUT_TOKENS = 200_000
/** gpt-4o's context window (gateway.yaml): the input bound of a request with media by URL. */
const CONTEXT_WINDOW = Number(modelOf(readRepoConfig(), MODEL).context_window)

/** The model's per-item price for URL media, read from the YAML as the operator wrote it. */
function urlMediaItem (modelId: string): bigint {
  const raw = (modelOf(readRepoConfig(), modelId).pricing as Record<string, unknown> | undefined)?.url_media_item
  if (typeof raw !== 'string') throw new Error(`${modelId} declares no url_media_item`)
  return nanos(raw)
}

const price = priceOf(MODEL)
/** The context window as input and 1 output token, plus two URL items. */
const HOLD = expectedCost(price, { inputTokens: CONTEXT_WINDOW, outputTokens: 1 }) + 2n * urlMediaItem(MODEL)
const CHARGE = expectedCost(price, { inputTokens: MEDIA_INPUT_TOKENS, outputTokens: 1 })
const CREDIT = nanos('0.40')

/** Lines a gateway's logger wrote, parsed. */
function logCapture (): { stream: Writable, lines: () => Array<Record<string, unknown>>, text: () => string } {
  const chunks: string[] = []
  const stream = new Writable({ write (chunk: Buffer, _enc, done) { chunks.push(chunk.toString('utf8')); done() } })
  const text = (): string => chunks.join('')
  return { stream, text, lines: () => text().split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as Record<string, unknown>) }
}

t.test('the figures of the issue', async (t) => {
  t.equal(expectedCost(price, { inputTokens: 258, outputTokens: 1 }), nanos('0.000655'), 'without the URL items the hold was 0.000655')
  t.equal(CONTEXT_WINDOW, 128_000, 'the model declares its context window')
  t.ok(CHARGE > HOLD, `the reported charge ${CHARGE} (more input than the context window) is above even the new hold ${HOLD}`)
  t.ok(CHARGE > CREDIT, 'and above the whole wallet of 0.40')
})

for (const backend of ['sqlite', 'pg'] as Backend[]) {
  t.test(`a charge above its hold is posted down to the bound, the rest unrecovered and reported (${backend})`, async (t) => {
    const logs = logCapture()
    // 0.40 covers the hold (≈ 0.327) but not the charge (≈ 0.50); the bound is the floor of 0.
    const gw = await startTestGateway({ backend, credit: '0.40', server: { adminToken: ADMIN_TOKEN, logger: { level: 'info', stream: logs.stream } } })
    t.teardown(() => gw.close())
    const cap = capturingFetch()
    const openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: gw.key, maxRetries: 0, fetch: cap.fetch })

    const r = await openai.chat.completions.create(BODY, { headers: { 'x-mock-input-tokens': String(MEDIA_INPUT_TOKENS) } })
    t.equal(r.usage?.prompt_tokens, MEDIA_INPUT_TOKENS, 'the upstream reported 200,000 input tokens')
    t.equal(cap.last().body.length, 258, 'the SDK sent the 258-byte body')
    t.equal(gw.mock.calls.length, 1, 'forwarded once')

    const requestId = cap.last().response?.headers.get('x-request-id') ?? ''
    const row = await settledRow(gw, requestId)
    t.equal(row.held, HOLD, 'the hold counted the context window and both URL items at url_media_item')
    t.equal(row.cost, CREDIT, 'posted: the whole wallet down to the bound of 0, no more')
    t.equal(row.overage, CREDIT - HOLD, 'the posted part above the hold is the overage')
    t.equal(row.unrecovered, CHARGE - CREDIT, 'the rest of the reported cost is unrecovered')
    t.equal(row.billingStatus, 'BILLED')
    t.equal(row.usageReported, true)

    const ledger = await ledgerState(gw)
    t.equal(ledger.balance, 0n, 'the balance stops at the bound')
    t.equal(ledger.charges.length, 1, 'one charge entry')
    t.match(ledger.charges[0], { amount: -CREDIT, overage: CREDIT - HOLD, unrecovered: CHARGE - CREDIT }, 'the charge entry is the receipt: posted, overage, unrecovered')
    t.equal(ledger.held, 0n, 'nothing left held')
    t.equal(ledger.entriesSum, ledger.balance, 'entries sum to the balance')

    const admin = adminClient(gw, ADMIN_TOKEN)
    const listed = await admin<{ data: Array<{ request_id: string, cost: string, held: string, overage: string | null, unrecovered: string | null }> }>('GET', `/requests?account_id=${gw.account.id}`)
    const view = listed.json.data.find((d) => d.request_id === requestId)
    t.match(view, { cost: '0.40', held: '0.32741', overage: '0.07259', unrecovered: '0.10001' }, 'the admin request listing shows both')

    const reported = logs.lines().filter((l) => typeof l.msg === 'string' && l.msg.startsWith('unrecovered overage'))
    t.equal(reported.length, 1, 'one log line')
    t.match(reported[0], { level: 40, requestId, reported: '0.50001', posted: '0.40', unrecovered: '0.10001', model: MODEL }, 'warn level, naming the request and the amounts')
    t.notOk(logs.text().includes(gw.key), 'no key in the log')
    t.notOk(logs.text().includes('Compare all'), 'no prompt in the log')
    const metrics = await gw.app.gatewayMetrics?.registry.metrics() ?? ''
    t.match(metrics, /^gateway_unrecovered_overages_total 1$/m, 'the count metric')
    t.match(metrics, /^gateway_unrecovered_overage_total 0\.10001$/m, 'the amount metric, in currency units')

    // Refused until a top-up, before anything is sent: a grant does not unlock it.
    const small = { model: MODEL, max_tokens: 1, messages: [{ role: 'user' as const, content: 'hi' }] }
    const refusedAfter = async (): Promise<unknown> => await openai.chat.completions.create(small).then(() => null, (err: unknown) => err)
    t.equal((await admin('POST', `/accounts/${gw.account.id}/credits`, { amount: '5.00', kind: 'grant' })).status, 200, 'a grant of 5.00')
    const calls = gw.mock.calls.length
    t.match(await refusedAfter(), { status: 402, error: { code: 'BILLING_INSUFFICIENT_CREDITS' } }, 'refused despite the grant')
    t.equal(gw.mock.calls.length, calls, 'not forwarded')
    const wallet = await admin<{ balance: string, unrecovered_at: string | null, overdraft: string }>('GET', `/accounts/${gw.account.id}/wallet`)
    t.match(wallet.json, { balance: '5.00', overdraft: '0.00', unrecovered_at: /^\d{4}-/ }, 'the wallet view says why')
    await admin('POST', `/accounts/${gw.account.id}/credits`, { amount: '0.01', kind: 'topup' })
    const served = await openai.chat.completions.create(small)
    t.ok(served.id, 'a top-up unlocks it')
    t.equal((await admin<{ unrecovered_at: string | null }>('GET', `/accounts/${gw.account.id}/wallet`)).json.unrecovered_at, null)
  })

  t.test(`the hold includes the URL items: a wallet that covers the old hold only is refused (${backend})`, async (t) => {
    // 0.005 covers 0.000655 (the hold without the items) but not 0.32741.
    const gw = await startTestGateway({ backend, credit: '0.005' })
    t.teardown(() => gw.close())
    const openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: gw.key, maxRetries: 0 })
    const refused = await openai.chat.completions.create(BODY).then(() => null, (err: unknown) => err)
    t.match(refused, { status: 402, error: { code: 'BILLING_INSUFFICIENT_CREDITS' } })
    t.equal(gw.mock.calls.length, 0, 'nothing sent upstream')
    const { data: text, response } = await openai.chat.completions.create({ ...BODY, messages: [{ role: 'user', content: 'Compare all' }] }).withResponse()
    t.ok(text.id, 'the same request without the URLs fits the wallet')
    // Settlement runs after the answer ended: wait for it (its request log row) before reading the ledger.
    await settledRow(gw, response.headers.get('x-request-id') ?? '')
    const ledger = await ledgerState(gw)
    t.equal(ledger.charges.length, 1, 'only the request that ran is billed')
    t.equal(ledger.charges[0]?.overage, null, 'a charge within its hold is not marked')
  })
}

t.test('the tier\'s overdraft lowers the bound: a charge is posted down to floor − overdraft', async (t) => {
  const tiers = { free: { rank: 0, requests_per_minute: UNREACHED_LIMIT, concurrent_streams: UNREACHED_LIMIT, overdraft: '0.05' } }
  // 0.40 covers the hold (≈ 0.327); the charge (≈ 0.50) is above 0.40 and the 0.05 overdraft.
  const gw = await startTestGateway({ credit: '0.40', limits: { default_tier: 'free', tiers } })
  t.teardown(() => gw.close())
  const cap = capturingFetch()
  const openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: gw.key, maxRetries: 0, fetch: cap.fetch })
  await openai.chat.completions.create(BODY, { headers: { 'x-mock-input-tokens': String(MEDIA_INPUT_TOKENS) } })
  const row = await settledRow(gw, cap.last().response?.headers.get('x-request-id') ?? '')
  t.ok(CHARGE > nanos('0.45'), 'the reported charge is above the wallet and its overdraft')
  t.equal(row.cost, nanos('0.45'), 'posted 0.40 and the 0.05 overdraft')
  t.equal(row.unrecovered, CHARGE - nanos('0.45'))
  t.equal((await gw.services.store.ledger.wallet(gw.account.id)).balance, -nanos('0.05'), 'the balance stops at −0.05')
})

t.test('an estimate above the hold is not an overage: the hold bounds what the gateway counted', async (t) => {
  const gw = await startTestGateway({ credit: '1.00' })
  t.teardown(() => gw.close())
  const cap = capturingFetch()
  const openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: gw.key, maxRetries: 0, fetch: cap.fetch })
  const before = (await gw.services.store.ledger.wallet(gw.account.id)).balance
  // Twenty generated words of up to 24 characters: about 120 tokens by the four-characters rule,
  // for a request held for 20 output tokens. The provider reports nothing, so the gateway estimates.
  const long = 'abcdefghijklmnopqrstuvwx'
  await openai.chat.completions.create(
    { model: MODEL, max_tokens: 20, messages: [{ role: 'user', content: `${long} ${long} ${long}` }] },
    { headers: { 'x-mock-usage': 'none', 'x-mock-chunks': '20' } }
  )
  const row = await settledRow(gw, cap.last().response?.headers.get('x-request-id') ?? '')
  t.equal(row.usageReported, false, 'estimated')
  const estimated = expectedCost(price, { inputTokens: row.usage?.inputTokens ?? 0, outputTokens: row.usage?.outputTokens ?? 0 })
  t.ok(row.held !== null && estimated > row.held, `the estimate (${estimated}) is above the hold (${String(row.held)})`)
  t.equal(row.cost, row.held, 'the charge is the hold: an estimate is never posted above it')
  t.equal(row.overage, null, 'no overage mark')
  t.equal((await gw.services.store.ledger.wallet(gw.account.id)).balance, before - (row.held ?? 0n))
})
