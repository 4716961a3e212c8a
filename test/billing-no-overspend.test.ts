// Money: a hold for the worst-case cost is placed atomically before anything goes upstream and
// can never take the wallet below its floor. A wallet that affords exactly 500 requests of a
// model whose actual cost equals its hold (one image: openai/gpt-image-1-edit, n: 1, at a named
// quality and size, so the hold and the charge are the same image_prices entry) gets 2000
// concurrent requests: exactly 500 are served and billed, the other 1500 are refused with
// BILLING_INSUFFICIENT_CREDITS before the provider is called, and the wallet ends at its
// floor with nothing held. On PostgreSQL with one instance, two instances sharing one schema,
// and on the embedded SQLite store.
import t, { type Test } from 'tap'
import { Pool } from 'undici'
import { startTestGateway, type TestGateway } from './helpers/gateway.js'
import { decimal, expectedCost, imageTierPrice, ledgerState, nanos, priceOf, waitForRows } from './helpers/billing.js'
import { readRepoConfig } from './helpers/test-config.js'

const MODEL = 'openai/gpt-image-1-edit'
const AFFORDABLE = 500
const TOTAL = 2000
/** Sockets per gateway instance on the client side: many requests in flight, not 2000 sockets. */
const CONNECTIONS = 250

const config = readRepoConfig()
const price = priceOf(MODEL, config)
/** Named in the body: `auto` or an absent value would be held at the dearest entry and charged at the rendered one. */
const TIER = { quality: 'medium', size: '1024x1024' }
const perRequest = expectedCost(price, { images: 1, imageTier: TIER })
const floor = nanos(String((config.wallet as { floor: string }).floor))
const credit = floor + perRequest * BigInt(AFFORDABLE)

const body = JSON.stringify({ model: MODEL, prompt: 'add a hat', images: [{ image_url: 'https://example.test/cat.png' }], n: 1, ...TIER })

interface Answer { status: number, code: string | null, billed: string | null, headerCode: string | null, requestId: string | null }

async function send (pool: Pool, gw: TestGateway): Promise<Answer> {
  const res = await pool.request({
    method: 'POST',
    path: '/v1/images/edits',
    headers: { 'content-type': 'application/json', ...gw.auth },
    body
  })
  const json = await res.body.json() as { error?: { code?: string } }
  const header = (name: string): string | null => {
    const v = res.headers[name]
    return typeof v === 'string' ? v : null
  }
  return {
    status: res.statusCode,
    code: json.error?.code ?? null,
    billed: header('x-gateway-billed'),
    headerCode: header('x-gateway-error-code'),
    requestId: header('x-request-id')
  }
}

async function run (t: Test, gws: TestGateway[]): Promise<void> {
  const first = gws[0] as TestGateway
  if (price.imagePrices === undefined) throw new Error(`${MODEL} is not priced by image_prices`)
  const entry = imageTierPrice(price.imagePrices, TIER)
  t.ok(entry > 0n, `${TIER.quality} ${TIER.size} is priced`)
  t.equal(perRequest, entry, `one edit of one image costs ${decimal(entry)}, its ${TIER.quality} ${TIER.size} entry, the same as its hold`)
  const before = await ledgerState(first)
  t.equal(before.balance, credit, `the wallet affords exactly ${AFFORDABLE} requests above the floor`)

  const pools = gws.map((gw) => new Pool(gw.url, { connections: CONNECTIONS }))
  t.teardown(async () => { await Promise.all(pools.map(async (p) => { await p.close() })) })
  const started = performance.now()
  const answers = await Promise.all(Array.from({ length: TOTAL }, async (_, i) => {
    const k = i % gws.length
    return await send(pools[k] as Pool, gws[k] as TestGateway)
  }))
  const elapsed = performance.now() - started

  const served = answers.filter((a) => a.status >= 200 && a.status < 300)
  const refused = answers.filter((a) => a.status === 402 && a.code === 'BILLING_INSUFFICIENT_CREDITS')
  const other = answers.filter((a) => !served.includes(a) && !refused.includes(a))
  t.comment(`${TOTAL} requests over ${gws.length} instance(s) in ${elapsed.toFixed(0)} ms: ${served.length} served, ${refused.length} refused`)
  t.equal(served.length, AFFORDABLE, `exactly ${AFFORDABLE} answered 2xx`)
  t.equal(refused.length, TOTAL - AFFORDABLE, `exactly ${TOTAL - AFFORDABLE} refused with 402 BILLING_INSUFFICIENT_CREDITS`)
  t.same(other, [], 'no other answer')
  t.ok(refused.every((a) => a.headerCode === 'BILLING_INSUFFICIENT_CREDITS' && a.billed === 'false'), 'refusals: X-Gateway-Error-Code and X-Gateway-Billed: false')
  t.ok(served.every((a) => a.billed === 'pending'), 'served answers: X-Gateway-Billed: pending (settled after the body)')
  t.equal(first.mock.calls.length, AFFORDABLE, `the provider was called exactly ${AFFORDABLE} times`)

  const rows = await waitForRows(gws, TOTAL)
  const billed = rows.filter((r) => r.billingStatus === 'BILLED')
  t.equal(rows.length, TOTAL, 'one request log row per request')
  t.equal(billed.length, AFFORDABLE, `${AFFORDABLE} rows BILLED`)
  t.ok(billed.every((r) => r.cost === perRequest && r.held === perRequest && r.usage?.calls === 1), `each billed row: one call, cost = hold = ${decimal(perRequest)}`)
  const refusedRows = rows.filter((r) => r.errorCode === 'BILLING_INSUFFICIENT_CREDITS')
  t.equal(refusedRows.length, TOTAL - AFFORDABLE, 'refused rows name BILLING_INSUFFICIENT_CREDITS')
  t.ok(refusedRows.every((r) => r.billingStatus === 'NOT_BILLED' && r.holdId === null && r.cost === null && r.status === 402), 'refused rows: no hold, no cost, 402')
  t.same(new Set(rows.map((r) => r.requestId)), new Set(answers.map((a) => a.requestId)), 'the rows are the answered requests (X-Request-ID)')

  const after = await ledgerState(first)
  t.equal(after.balance, floor, 'final balance == floor')
  t.equal(after.held, 0n, 'nothing held')
  t.equal(after.openHolds, 0, 'no open hold')
  t.equal(after.entriesSum, after.balance, 'ledger entries sum to the balance')
  t.equal(after.charges.length, AFFORDABLE, `${AFFORDABLE} charge entries`)
  t.equal(after.charged, perRequest * BigInt(AFFORDABLE), `charges total ${AFFORDABLE} × ${decimal(perRequest)}`)
  t.ok(after.charges.every((e) => e.amount === -perRequest), 'each charge is exactly one call')
  t.equal(rows.reduce((sum, r) => sum + (r.cost ?? 0n), 0n), after.charged, 'request log costs == ledger charges')
}

t.test('PostgreSQL, one instance', async (t) => {
  const gw = await startTestGateway({ backend: 'pg', credit: decimal(credit) })
  t.teardown(() => gw.close())
  await run(t, [gw])
})

t.test('PostgreSQL, two instances on one schema', async (t) => {
  const a = await startTestGateway({ backend: 'pg', credit: decimal(credit) })
  const b = await startTestGateway({ shareStoreWith: a, mock: a.mock })
  // The second instance closes first: the first owns the mock and drops the schema.
  t.teardown(async () => {
    await b.close()
    await a.close()
  })
  t.equal(b.account.id, a.account.id, 'both instances bill the same wallet')
  await run(t, [a, b])
})

t.test('SQLite (embedded), one instance', async (t) => {
  const gw = await startTestGateway({ backend: 'sqlite', credit: decimal(credit) })
  t.teardown(() => gw.close())
  await run(t, [gw])
})
