// The hold keeper over a real ledger (SQLite and PostgreSQL): a kept hold's expiry moves
// forward while its request runs, and stops moving once the hold is dropped or closed.
import t from 'tap'
import { testBackends } from './helpers/store.js'
import { createHoldKeeper } from '../plugins/concerns/wallet/hold-renewal.js'
import { createWallet } from '../plugins/concerns/wallet/wallet.js'

const TTL_MS = 300

async function until (check: () => Promise<boolean>): Promise<boolean> {
  for (let i = 0; i < 200; i++) {
    if (await check()) return true
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  return false
}

for (const backend of testBackends()) {
  t.test(`hold keeper (${backend.name})`, async (t) => {
    t.teardown(() => backend.cleanup())
    const store = await backend.open()
    const { id: accountId } = await store.accounts.create({ name: 'keeper' })
    await store.ledger.credit({ accountId, amount: 1000n, kind: 'topup', postingId: `fund-${accountId}` })
    const warnings: string[] = []
    const keeper = createHoldKeeper({ wallet: createWallet({ ledger: store.ledger }), warn: ({ reason }) => { warnings.push(reason) } })
    const expiryOf = async (holdId: string): Promise<number | undefined> =>
      (await store.ledger.openHolds(accountId)).find((h) => h.id === holdId)?.expiresAt.getTime()

    t.test('renews while kept, stops when dropped', async (t) => {
      const held = await store.ledger.hold({ accountId, amount: 10n, floor: 0n, requestId: 'req-kept', ttlMs: TTL_MS })
      if (!held.ok) throw new Error('hold refused')
      const hold = { holdId: held.holdId, closed: false }
      keeper.keep(hold, TTL_MS)
      const first = held.expiresAt.getTime()
      t.ok(await until(async () => ((await expiryOf(hold.holdId)) ?? 0) > first), 'the expiry moved forward')
      t.ok(await until(async () => ((await expiryOf(hold.holdId)) ?? 0) > first + TTL_MS), 'and again, past the first TTL')
      keeper.drop(hold.holdId)
      t.equal(keeper.size(), 0)
      // A renewal the keeper sent just before the drop may still land: read after it has.
      await new Promise((resolve) => setTimeout(resolve, TTL_MS))
      const last = await expiryOf(hold.holdId)
      // Three renewal periods (TTL/3 each) later, none more.
      await new Promise((resolve) => setTimeout(resolve, TTL_MS))
      t.equal(await expiryOf(hold.holdId), last, 'no renewal after drop')
      await store.ledger.release(hold.holdId)
    })

    t.test('a closed hold stops its own renewal', async (t) => {
      const held = await store.ledger.hold({ accountId, amount: 10n, floor: 0n, requestId: 'req-closed', ttlMs: TTL_MS })
      if (!held.ok) throw new Error('hold refused')
      const hold = { holdId: held.holdId, closed: true }
      keeper.keep(hold, TTL_MS)
      t.ok(await until(async () => keeper.size() === 0), 'forgotten at its first tick')
      t.equal(await expiryOf(hold.holdId), held.expiresAt.getTime(), 'never renewed')
      t.same(warnings, [])
      await store.ledger.release(hold.holdId)
    })
  })
}
