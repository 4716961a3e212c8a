// The wallet marks a request's charge lazy: its answer was sent, so the embedded ledger may
// commit it with the next request's hold (store-ledger-settle-wait). Through the gateway on the
// embedded store, with the ledger's settle recorded as the wallet calls it. A job's end
// (plugins/concerns/jobs/settle-job.ts) posts without it.
import t from 'tap'
import type { LedgerStore } from '../plugins/foundation/store/ledger/index.js'
import { startTestGateway } from './helpers/gateway.js'
import { eventually } from './helpers/wire.js'

type SettleInput = Parameters<LedgerStore['settle']>[0]

t.test('a served request\'s charge reaches the ledger lazy, and is posted', async (t) => {
  const gw = await startTestGateway()
  t.teardown(() => gw.close())
  const ledger = gw.services.store.ledger
  const seen: SettleInput[] = []
  const settle = ledger.settle.bind(ledger)
  ledger.settle = async (input) => {
    seen.push(input)
    return await settle(input)
  }
  const before = (await ledger.wallet(gw.account.id)).balance

  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { ...gw.auth, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'Say hello' }], max_tokens: 16 })
  })
  t.equal(res.status, 200, 'served')
  await res.text()
  await eventually(() => seen.length > 0, 'the request\'s settle', 5_000)
  t.equal(seen.length, 1, 'one settle for the request')
  t.equal(seen[0]?.lazy, true, 'marked lazy')
  // This process's read commits the waiting charge first.
  const after = (await ledger.wallet(gw.account.id))
  t.ok(after.balance < before, 'the charge is in the balance the gateway reads')
  t.equal(after.held, 0n, 'and the hold is closed')
})
