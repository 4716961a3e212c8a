// The URL-media burst of issue 25: 30 concurrent chat calls with an image by URL, max_tokens 1,
// and a provider that reports 200,000 prompt tokens for the fetched image: 12 were admitted on a
// 0.10 wallet, held 0.097 in all, charged 6.00, and the wallet ended at −5.90. Now media by URL
// makes the hold count the model's context window as input (plus the model's url_media_item), and
// the provider reports what it can: up to the context window (here 120,000 of 128,000). On both
// stores, with the OpenAI SDK as the client.
import { OpenAI } from 'openai'
import t, { type Test } from 'tap'
import { expectedCost, ledgerState, nanos, priceOf } from './helpers/billing.js'
import { startTestGateway, type Backend, type TestGateway } from './helpers/gateway.js'
import { modelOf, readRepoConfig } from './helpers/test-config.js'
import { checkBounded, refusalCode } from './helpers/wallet-bound.js'

const CALLS = 30
/** What the provider counted for the fetched image: within the 128,000-token context window. */
const REPORTED_INPUT = 120_000

function figures (model: string): { hold: bigint, charge: bigint } {
  const m = modelOf(readRepoConfig(), model)
  const item = nanos(String(m.pricing?.url_media_item))
  const price = priceOf(model)
  return {
    hold: expectedCost(price, { inputTokens: Number(m.context_window), outputTokens: 1 }) + item,
    charge: expectedCost(price, { inputTokens: REPORTED_INPUT, outputTokens: 1 })
  }
}

/** The burst: `CALLS` calls at once, alternating over the instances `gws` (one store, one account). */
async function burst (gws: readonly TestGateway[], model: string): Promise<Array<PromiseSettledResult<unknown>>> {
  const clients = gws.map((gw) => new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: (gws[0] as TestGateway).key, maxRetries: 0 }))
  return await Promise.allSettled(Array.from({ length: CALLS }, async (_, i) => await (clients[i % clients.length] as OpenAI).chat.completions.create({
    model,
    max_tokens: 1,
    messages: [{ role: 'user', content: [{ type: 'text', text: 'Describe' }, { type: 'image_url', image_url: { url: `https://example.test/${i}.jpg` } }] }]
  }, { headers: { 'x-mock-input-tokens': String(REPORTED_INPUT) } })))
}

async function run (t: Test, backend: Backend, model: string): Promise<{ served: number, gw: TestGateway }> {
  const gw = await startTestGateway({ backend, credit: '0.10' })
  t.teardown(() => gw.close())
  return await check(t, [gw], model)
}

/** The burst over `gws` and what it must leave: every call served or refused for credit, each charge within its hold. */
async function check (t: Test, gws: readonly TestGateway[], model: string): Promise<{ served: number, gw: TestGateway }> {
  const gw = gws[0] as TestGateway
  const { hold, charge } = figures(model)
  t.ok(hold >= charge, `the hold (${hold}) bounds what the provider can report (${charge})`)
  const results = await burst(gws, model)
  const served = results.filter((r) => r.status === 'fulfilled').length
  const refused = results.filter((r) => r.status === 'rejected' && refusalCode(r.reason) === 'BILLING_INSUFFICIENT_CREDITS').length
  t.equal(served + refused, CALLS, 'every call is served or refused for credit, nothing else')
  t.equal(gw.mock.calls.length, served, 'only served calls reached the provider')
  const rows = await checkBounded(t, gws, CALLS)
  for (const row of rows.filter((r) => r.billingStatus === 'BILLED')) {
    t.equal(row.held, hold, 'held the context window and the item price')
    t.equal(row.cost, charge, 'charged what the provider reported')
  }
  t.equal((await ledgerState(gw)).balance, nanos('0.10') - BigInt(served) * charge, 'balance = 0.10 − the charges')
  return { served, gw }
}

for (const backend of ['sqlite', 'pg'] as Backend[]) {
  t.test(`gpt-4o: 30 calls with an image by URL on a 0.10 wallet — none can be held (${backend})`, async (t) => {
    const { served } = await run(t, backend, 'openai/gpt-4o')
    t.equal(served, 0, 'a hold of the context window (≈ 0.33) does not fit 0.10')
  })

  t.test(`gpt-4o-mini: 30 calls with an image by URL on a 0.10 wallet — served within their holds (${backend})`, async (t) => {
    const { served } = await run(t, backend, 'openai/gpt-4o-mini')
    const { hold, charge } = figures('openai/gpt-4o-mini')
    t.ok(served >= Number(nanos('0.10') / hold), `at least as many as fit at once (${served})`)
    t.ok(BigInt(served) * charge <= nanos('0.10'), 'never more than the wallet pays for')
  })
}

t.test('two instances on one PostgreSQL and one Redis: 30 gpt-4o-mini calls on a 0.10 wallet, never below the floor', async (t) => {
  const channel = `wallet-bound-media-${process.pid}-${Date.now()}`
  const a = await startTestGateway({ backend: 'pg', redisChannel: channel, credit: '0.10' })
  t.teardown(() => a.close())
  const b = await startTestGateway({ backend: 'pg', redisChannel: channel, location: a.location, mock: a.mock, seed: false, shareStoreWith: a })
  t.teardown(() => b.close())
  const { served } = await check(t, [a, b], 'openai/gpt-4o-mini')
  const { hold, charge } = figures('openai/gpt-4o-mini')
  t.ok(served >= Number(nanos('0.10') / hold), `at least as many as fit at once (${served})`)
  t.ok(BigInt(served) * charge <= nanos('0.10'), 'never more than the wallet pays for')
})
