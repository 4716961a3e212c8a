// The GenAI urlContext burst of issue 25: 250 concurrent generateContent calls with the
// `urlContext` tool, the URL in plain text, maxOutputTokens 1, and a provider that reports
// 1,000,000 prompt tokens (the pages it fetched; within gemini-2.5-flash's context window). Each
// was held 0.000049 and charged 0.3000025: a 0.10 wallet on a free-tier account with 5 keys
// ended at −74.900625. Now the input of a request that fetches URLs is held at the model's
// context window, so the hold bounds the charge, and no burst takes the wallet below its floor.
// On SQLite and PostgreSQL, and on two instances sharing PostgreSQL and Redis; the official
// @google/genai SDK as the client.
import { ApiError, GoogleGenAI } from '@google/genai'
import t, { type Test } from 'tap'
import { expectedCost, ledgerState, nanos, priceOf, settledRow } from './helpers/billing.js'
import { startTestGateway, type Backend, type TestGateway } from './helpers/gateway.js'
import { modelOf, readRepoConfig } from './helpers/test-config.js'
import { checkBounded, moreKeys } from './helpers/wallet-bound.js'

const MODEL = 'genai/gemini-2.5-flash'
const CALLS = 250
/** The pages the provider fetched, as it reports them. */
const FETCHED_TOKENS = 1_000_000
const CONTEXT_WINDOW = Number(modelOf(readRepoConfig(), MODEL).context_window)
const price = priceOf(MODEL)
/** The hold of one call: the context window as input, one output token. */
const HOLD = expectedCost(price, { inputTokens: CONTEXT_WINDOW, outputTokens: 1 })
/** What the provider's report costs. */
const CHARGE = expectedCost(price, { inputTokens: FETCHED_TOKENS, outputTokens: 1 })

t.test('the figures', async (t) => {
  t.equal(CONTEXT_WINDOW, 1_048_576, 'gemini-2.5-flash declares its context window')
  t.ok(FETCHED_TOKENS <= CONTEXT_WINDOW, 'the report is within what the provider can read')
  t.equal(CHARGE, nanos('0.3000025'), 'each call costs 0.3000025, as in the issue')
  t.ok(HOLD >= CHARGE, `the hold (${HOLD}) bounds the charge (${CHARGE})`)
  t.ok(HOLD > nanos('0.10'), 'a 0.10 wallet cannot hold even one such call')
})

function clients (gws: readonly TestGateway[], keys: readonly string[]): GoogleGenAI[] {
  return keys.map((key, i) => {
    const gw = gws[i % gws.length] as TestGateway
    return new GoogleGenAI({ apiKey: key, httpOptions: { baseUrl: `${gw.url}/genai`, headers: { 'x-genai-api-key': key }, retryOptions: { attempts: 1 } } })
  })
}

/** The burst: `CALLS` calls at once, spread over the clients; resolves with each outcome. */
async function burst (sdks: readonly GoogleGenAI[]): Promise<Array<PromiseSettledResult<unknown>>> {
  return await Promise.allSettled(Array.from({ length: CALLS }, async (_, i) => await (sdks[i % sdks.length] as GoogleGenAI).models.generateContent({
    model: MODEL,
    contents: `Summarise https://example.test/page-${i} in one word.`,
    config: { tools: [{ urlContext: {} }], maxOutputTokens: 1, httpOptions: { headers: { 'x-mock-input-tokens': String(FETCHED_TOKENS) } } }
  })))
}

function refusedWith (results: ReadonlyArray<PromiseSettledResult<unknown>>, status: number, code: string): number {
  return results.filter((r) => r.status === 'rejected' && r.reason instanceof ApiError && r.reason.status === status && r.reason.message.includes(code)).length
}

async function smallWallet (t: Test, gws: readonly TestGateway[]): Promise<void> {
  const gw = gws[0] as TestGateway
  const keys = [gw.key, ...await moreKeys(gw, 4)]
  const results = await burst(clients(gws, keys))
  t.equal(results.filter((r) => r.status === 'fulfilled').length, 0, 'no call is served: none can be held')
  t.equal(refusedWith(results, 402, 'BILLING_INSUFFICIENT_CREDITS'), CALLS, 'every call is refused BILLING_INSUFFICIENT_CREDITS (402)')
  t.equal(gw.mock.calls.length, 0, 'nothing reached the provider')
  const rows = await checkBounded(t, gws, CALLS)
  t.ok(rows.every((r) => r.errorCode === 'BILLING_INSUFFICIENT_CREDITS' && r.billingStatus === 'NOT_BILLED' && r.cost === null), 'each row: refused, not billed')
  t.equal((await ledgerState(gw)).balance, nanos('0.10'), 'the wallet keeps its 0.10')
}

/** 1.00 affords three holds; each settles at 0.3000025, after which no fourth hold fits. */
async function largerWallet (t: Test, gws: readonly TestGateway[]): Promise<void> {
  const gw = gws[0] as TestGateway
  const keys = [gw.key, ...await moreKeys(gw, 4)]
  const results = await burst(clients(gws, keys))
  const served = results.filter((r) => r.status === 'fulfilled').length
  t.equal(served, 3, 'exactly three calls are served: after three charges no hold fits, whatever the interleaving')
  t.equal(refusedWith(results, 402, 'BILLING_INSUFFICIENT_CREDITS'), CALLS - 3, 'the others are refused before anything is held')
  t.equal(gw.mock.calls.length, 3, 'only the served calls reached the provider')
  const rows = await checkBounded(t, gws, CALLS)
  const billed = rows.filter((r) => r.billingStatus === 'BILLED')
  t.equal(billed.length, 3)
  for (const row of billed) {
    t.equal(row.held, HOLD, 'held the context window')
    t.equal(row.cost, CHARGE, 'charged the reported million tokens')
    t.equal(row.usage?.inputTokens, FETCHED_TOKENS)
    t.same(row.usage?.features, { url_context: { uses: 1, reported: false, charge: 'tokens', price: null } }, 'the receipt names the feature: billed as the tokens it read')
  }
  t.equal((await ledgerState(gw)).balance, nanos('1.00') - 3n * CHARGE, 'balance = 1.00 − three charges, exactly')
}

for (const backend of ['sqlite', 'pg'] as Backend[]) {
  t.test(`250 urlContext calls on a 0.10 free-tier wallet with 5 keys: none served, the wallet intact (${backend})`, async (t) => {
    const gw = await startTestGateway({ backend, credit: '0.10' })
    t.teardown(() => gw.close())
    t.equal(gw.account.tier, 'free', 'a free-tier account')
    await smallWallet(t, [gw])
  })

  t.test(`250 urlContext calls on a 1.00 wallet: three served within their holds, never below the floor (${backend})`, async (t) => {
    const gw = await startTestGateway({ backend, credit: '1.00' })
    t.teardown(() => gw.close())
    await largerWallet(t, [gw])
  })
}

t.test('two instances on one PostgreSQL and one Redis: the same bound', async (t) => {
  const channel = `wallet-bound-${process.pid}-${Date.now()}`
  const a = await startTestGateway({ backend: 'pg', redisChannel: channel, credit: '1.00' })
  t.teardown(() => a.close())
  const b = await startTestGateway({ backend: 'pg', redisChannel: channel, location: a.location, mock: a.mock, seed: false, shareStoreWith: a })
  t.teardown(() => b.close())
  await largerWallet(t, [a, b])
})

t.test('one call on a wallet that holds it: the receipt explains the charge', async (t) => {
  const gw = await startTestGateway({ credit: '1.00' })
  t.teardown(() => gw.close())
  const [sdk] = clients([gw], [gw.key])
  const { sdkHttpResponse } = await (sdk as GoogleGenAI).models.generateContent({
    model: MODEL,
    contents: 'Summarise https://example.test/big-page in one word.',
    config: { tools: [{ urlContext: {} }], maxOutputTokens: 1, httpOptions: { headers: { 'x-mock-input-tokens': String(FETCHED_TOKENS) } } }
  })
  const row = await settledRow(gw, sdkHttpResponse?.headers?.['x-request-id'] ?? '')
  t.equal(row.held, HOLD)
  t.equal(row.cost, CHARGE)
  t.equal(row.overage, null)
  t.equal(row.usageReported, true)
})
