// Key caps through the gateway on PostgreSQL, two instances on one store: 100 concurrent
// requests of a capped key never overshoot the cap (exactly the most that fit are admitted,
// the sum of their charges stays under the cap), and a settle below the hold gives the
// difference back (a request refused at the cap is admitted once the earlier ones settled lower).
import t from 'tap'
import { parseMoney } from '../plugins/foundation/pricing/money.js'
import { startTestGateway } from './helpers/gateway.js'

const gw = await startTestGateway({ backend: 'pg' })
t.teardown(() => gw.close())
const other = await startTestGateway({ mock: gw.mock, shareStoreWith: gw })
t.teardown(() => other.close())

const MODEL = 'openai/gpt-4o-mini'
const body = JSON.stringify({ model: MODEL, max_tokens: 64, messages: [{ role: 'user', content: 'hi' }] })
const send = async (base: string, key: string, delayMs: number): Promise<Response> => await fetch(`${base}/v1/chat/completions`, {
  method: 'POST',
  headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'x-mock-delay-ms': String(delayMs) },
  body
})

t.test('100 concurrent requests at a daily cap over two instances; then a settle below the hold frees room', async (t) => {
  const store = gw.services.store
  /** True once the account has no open hold (polled, up to 10 s). */
  const noOpenHolds = async (accountId: string): Promise<boolean> => {
    for (let i = 0; i < 400; i++) {
      if ((await store.ledger.openHolds(accountId)).length === 0) return true
      await new Promise((resolve) => setTimeout(resolve, 25))
    }
    return false
  }
  const account = await store.accounts.create({ name: 'capped' })
  await store.ledger.credit({ accountId: account.id, amount: parseMoney('1000.00'), kind: 'topup', postingId: `fund-${account.id}` })
  await store.accounts.markToppedUp(account.id)
  const probe = await store.keys.create({ accountId: account.id, name: 'probe' })
  if (!probe.ok) throw new Error(probe.error)

  // The hold of one such request (its worst case), read while it is in flight.
  const inFlight = send(gw.url, probe.value.plaintext, 800)
  let hold = 0n
  for (let i = 0; i < 200 && hold === 0n; i++) {
    hold = (await store.ledger.openHolds(account.id))[0]?.amount ?? 0n
    if (hold === 0n) await new Promise((resolve) => setTimeout(resolve, 5))
  }
  t.equal((await inFlight).status, 200, 'the probe is served')
  t.ok(hold > 0n, `one request holds ${hold} nano-units`)
  // The probe's settle runs after its answer is sent: its hold closes before the wallet is read.
  t.ok(await noOpenHolds(account.id), 'the probe\'s hold closed')

  const FIT = 7
  const cap = BigInt(FIT) * hold + hold / 2n
  const created = await store.keys.create({ accountId: account.id, name: 'capped', dailySpendCap: cap, timezone: 'America/New_York' })
  if (!created.ok) throw new Error(created.error)
  const key = created.value
  const heldBefore = (await store.ledger.wallet(account.id)).held
  const calls = gw.mock.calls.length

  // Slow answers (8 s, room for a loaded machine): every hold is decided while the admitted ones are still open.
  const answers = await Promise.all(Array.from({ length: 100 }, async (_, i) => {
    const res = await send(i % 2 === 0 ? gw.url : other.url, key.plaintext, 8000)
    const text = await res.text()
    return { status: res.status, code: res.headers.get('x-gateway-error-code'), text }
  }))
  const served = answers.filter((a) => a.status === 200).length
  t.equal(served, FIT, `exactly ${FIT} of 100 admitted: the most whose holds fit the cap`)
  t.equal(answers.filter((a) => a.status === 429 && a.code === 'LIMIT_API_KEY_DAILY_QUOTA_EXHAUSTED').length, 100 - FIT, 'the rest refused naming the daily cap')
  t.equal(gw.mock.calls.length - calls, FIT, 'only the admitted reached the upstream')
  // The settle runs once the answer is sent: wait (bounded) until every hold is closed.
  t.ok(await noOpenHolds(account.id), 'every hold closed')
  t.equal((await store.ledger.wallet(account.id)).held, heldBefore, 'the wallet holds what it held before')

  const usage = await store.ledger.keyUsage(key.record.id, '2000-01-01')
  const day = usage.filter((r) => r.kind === 'spend')
  t.equal(day.length, 1, 'one local day bucket')
  const used = day[0]?.used ?? 0n
  t.ok(used > 0n && used <= cap, `sum of charges ${used} ≤ cap ${cap}`)
  t.equal(day[0]?.held, 0n, 'nothing reserved any more')
  t.ok(used < BigInt(FIT) * hold, 'the settles charged below the holds')

  // Each settle gave back hold − charge: room for more requests than before.
  const more = Number((cap - used) / hold)
  t.ok(more >= 1, `${more} more holds fit after the settles`)
  const again = await send(other.url, key.plaintext, 0)
  await again.arrayBuffer()
  t.equal(again.status, 200, 'a request refused at the cap before is admitted after the earlier ones settled lower')
})
