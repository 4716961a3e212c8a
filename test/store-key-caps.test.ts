// Key quotas and caps counted in the hold's own transaction (plugins/foundation/store/ledger/caps.ts), on
// both stores: daily-cap rollover at local midnight (Asia/Tokyo; America/New_York on both DST
// days of 2026), the 30-day window, the lifetime quota, images refused whole, a settle below the
// hold giving the difference back, releases and the reaper giving it all back, and 100
// concurrent holds at a cap never overshooting it.
import t, { type Test } from 'tap'
import type { HoldResult, Store } from '../plugins/foundation/store/index.js'
import type { HoldCaps } from '../plugins/foundation/store/ledger/index.js'
import { startOfLocalDay } from '../plugins/foundation/store/ledger/index.js'
import { ManualClock, testBackends } from './helpers/store.js'

const UNIT = 1_000_000_000n // 1.00 in nano-units
const FLOOR = 0n

function caps (keyId: string, over: Partial<HoldCaps>): HoldCaps {
  return { keyId, timezone: 'UTC', quota: null, dailySpendCap: null, monthlySpendCap: null, dailyImageCap: null, images: 0, ...over }
}

t.test('local midnight of the DST days is found (the helper the usage view relies on)', async (t) => {
  t.equal(startOfLocalDay('2026-03-09', 'America/New_York').toISOString(), '2026-03-09T04:00:00.000Z', 'after spring-forward: UTC−4')
  t.equal(startOfLocalDay('2026-03-08', 'America/New_York').toISOString(), '2026-03-08T05:00:00.000Z', 'spring-forward day starts in UTC−5')
  t.equal(startOfLocalDay('2026-11-01', 'America/New_York').toISOString(), '2026-11-01T04:00:00.000Z', 'fall-back day starts in UTC−4')
  t.equal(startOfLocalDay('2026-11-02', 'America/New_York').toISOString(), '2026-11-02T05:00:00.000Z', 'after fall-back: UTC−5')
  t.equal(startOfLocalDay('2026-06-02', 'Asia/Tokyo').toISOString(), '2026-06-01T15:00:00.000Z', 'Tokyo: UTC+9')
})

for (const backend of testBackends()) {
  t.test(backend.name, async (t) => {
    t.teardown(() => backend.cleanup())
    const clock = new ManualClock('2026-06-01T00:00:00.000Z')
    const store: Store = await backend.open({ clock })
    let n = 0
    const fund = async (amount: bigint): Promise<string> => {
      const { id } = await store.accounts.create({ name: `caps ${++n}` })
      await store.ledger.credit({ accountId: id, amount, kind: 'topup', postingId: `fund-${id}` })
      return id
    }
    const hold = async (accountId: string, amount: bigint, c: HoldCaps): Promise<HoldResult> =>
      await store.ledger.hold({ accountId, amount, floor: FLOOR, requestId: `r-${++n}`, ttlMs: 600_000, caps: c })
    const holdId = (r: HoldResult): string => {
      if (!r.ok) throw new Error(`expected a hold, got ${r.error}`)
      return r.holdId
    }

    const rollover = async (t: Test, timezone: string, lastSecond: string): Promise<void> => {
      const account = await fund(100n * UNIT)
      const c = caps(`key-${timezone}-${lastSecond}`, { timezone, dailySpendCap: 3n * UNIT })
      const at = new Date(lastSecond).getTime()
      clock.advance(at - clock.now().getTime() - 10_000)
      // Earlier that local day: the whole cap spent.
      await store.ledger.settle({ holdId: holdId(await hold(account, 3n * UNIT, c)), amount: 3n * UNIT, requestId: 'spent' })
      clock.advance(10_000) // 23:59:59 local
      t.same(await hold(account, 1n, c), { ok: false, error: 'cap', cap: 'daily_spend_cap' }, `${timezone} ${lastSecond}: refused at 23:59:59 local`)
      clock.advance(1000) // 00:00:00 local, the next day
      const next = await hold(account, 3n * UNIT, c)
      t.ok(next.ok, `${timezone}: at 00:00:00 local the whole cap is free again`)
      t.same(await hold(account, 1n, c), { ok: false, error: 'cap', cap: 'daily_spend_cap' }, `${timezone}: and counted again from then`)
      t.same(await store.ledger.wallet(account).then((w) => w.held), 3n * UNIT, 'the refused holds held nothing')
    }

    t.test('daily cap rolls over at 00:00 in the key\'s zone', async (t) => {
      await rollover(t, 'Asia/Tokyo', '2026-06-01T14:59:59.000Z') // 23:59:59 JST
      // Spring forward (2026-03-08): the day is 23 hours; both its ends.
      await rollover(t, 'America/New_York', '2026-03-08T04:59:59.000Z') // 03-07 23:59:59 EST → 03-08 00:00 EST
      await rollover(t, 'America/New_York', '2026-03-09T03:59:59.000Z') // 03-08 23:59:59 EDT → 03-09 00:00 EDT
      // Fall back (2026-11-01): the day is 25 hours; both its ends.
      await rollover(t, 'America/New_York', '2026-11-01T03:59:59.000Z') // 10-31 23:59:59 EDT → 11-01 00:00 EDT
      await rollover(t, 'America/New_York', '2026-11-02T04:59:59.000Z') // 11-01 23:59:59 EST → 11-02 00:00 EST
    })

    t.test('the 30-day cap counts the last 30 local days', async (t) => {
      clock.advance(Date.parse('2026-12-01T12:00:00Z') - clock.now().getTime())
      const account = await fund(100n * UNIT)
      const c = caps('key-30d', { monthlySpendCap: 5n * UNIT })
      await store.ledger.settle({ holdId: holdId(await hold(account, 4n * UNIT, c)), amount: 4n * UNIT, requestId: 'day1' })
      clock.advance(29 * 86_400_000) // day 30 of the window
      t.same(await hold(account, 2n * UNIT, c), { ok: false, error: 'cap', cap: 'monthly_spend_cap' }, 'day 30: 4 spent, 2 more would be 6 > 5')
      t.ok((await hold(account, 1n * UNIT, c)).ok, 'day 30: 1 more fits exactly')
      clock.advance(86_400_000) // day 31: the first day left the window
      t.ok((await hold(account, 4n * UNIT, c)).ok, 'day 31: the spend of day 1 no longer counts')
    })

    t.test('lifetime quota; a settle below the hold gives the difference back; a release gives all back', async (t) => {
      const account = await fund(100n * UNIT)
      const c = caps('key-quota', { quota: 10n * UNIT })
      const first = holdId(await hold(account, 8n * UNIT, c))
      t.same(await hold(account, 3n * UNIT, c), { ok: false, error: 'cap', cap: 'quota' }, 'the open hold counts: 8 + 3 > 10')
      await store.ledger.settle({ holdId: first, amount: 2n * UNIT, requestId: 'low' })
      const second = await hold(account, 3n * UNIT, c)
      t.ok(second.ok, 'after settling at 2 of 8 held, the refused 3 is admitted (2 + 3 ≤ 10)')
      const rows = await store.ledger.keyUsage('key-quota', '2000-01-01')
      const total = rows.find((r) => r.kind === 'total')
      t.same({ used: total?.used, held: total?.held }, { used: 2n * UNIT, held: 3n * UNIT }, 'used = posted, held = open reservation')
      await store.ledger.release(holdId(second))
      t.ok((await hold(account, 8n * UNIT, c)).ok, 'a released hold gives all back: 2 + 8 ≤ 10')
      t.same(await store.ledger.resetKeyUsage('key-quota') > 0, true, 'reset changed the used rows')
      t.ok((await hold(account, 2n * UNIT, c)).ok, 'after a reset only the open hold (8) counts: 8 + 2 ≤ 10')
    })

    t.test('images: counted per image, 4 asked with 3 left refused whole; 00:00 UTC reset; the reaper gives back', async (t) => {
      clock.advance(Date.parse('2027-02-01T23:00:00Z') - clock.now().getTime())
      const account = await fund(100n * UNIT)
      const c = (images: number): HoldCaps => caps('key-img', { dailyImageCap: 5, images, timezone: 'Asia/Tokyo' })
      await store.ledger.settle({ holdId: holdId(await hold(account, UNIT, c(2))), amount: UNIT, requestId: 'two' })
      t.same(await hold(account, UNIT, c(4)), { ok: false, error: 'cap', cap: 'daily_image_cap' }, '4 asked with 3 left: refused whole')
      const expiring = await store.ledger.hold({ accountId: account, amount: UNIT, floor: FLOOR, requestId: 'exp', ttlMs: 1000, caps: c(3) })
      t.ok(expiring.ok, '3 asked with 3 left: admitted')
      t.same(await hold(account, UNIT, c(1)), { ok: false, error: 'cap', cap: 'daily_image_cap' }, 'the open hold\'s images count')
      clock.advance(2000)
      // (Holds of the earlier cases expire too: the clock went past them.)
      t.ok(await store.ledger.reapExpired() >= 1, 'the reaper expires holds')
      t.same(await store.ledger.openHolds(account), [], 'the image hold among them')
      t.ok((await hold(account, UNIT, c(3))).ok, 'and its 3 images are free again')
      clock.advance(Date.parse('2027-02-02T00:00:00Z') - clock.now().getTime())
      t.ok((await hold(account, UNIT, c(5))).ok, 'at 00:00 UTC (not Tokyo\'s midnight) the image cap is new')
    })

    t.test('account allowed models: set, kept by other patches, cleared', async (t) => {
      const { id } = await store.accounts.create({ name: 'models' })
      t.equal((await store.accounts.get(id))?.allowedModels, null, 'a new account: every model')
      const set = await store.accounts.update(id, { allowedModels: ['openai/gpt-4o', 'openai/gpt-4o-mini'] })
      t.same(set.ok && set.value.allowedModels, ['openai/gpt-4o', 'openai/gpt-4o-mini'])
      await store.accounts.update(id, { name: 'renamed' })
      t.same((await store.accounts.get(id))?.allowedModels, ['openai/gpt-4o', 'openai/gpt-4o-mini'], 'a patch without the field keeps it')
      await store.accounts.update(id, { allowedModels: null })
      t.equal((await store.accounts.get(id))?.allowedModels, null, 'null clears it')
    })

    t.test('100 concurrent holds at a cap never overshoot it; the most that fit are admitted', async (t) => {
      const account = await fund(1000n * UNIT)
      const c = caps('key-race', { dailySpendCap: 37n * UNIT, timezone: 'Europe/Paris' })
      const other = await backend.open({ clock })
      const results = await Promise.all(Array.from({ length: 100 }, async (_, i) =>
        await (i % 2 === 0 ? store : other).ledger.hold({ accountId: account, amount: UNIT, floor: FLOOR, requestId: `race-${i}`, ttlMs: 600_000, caps: c })))
      const admitted = results.filter((r) => r.ok).length
      t.equal(admitted, 37, 'exactly 37 of 100 admitted (cap 37, 1 each)')
      t.equal(results.filter((r) => !r.ok && r.error === 'cap').length, 63, 'the rest refused naming the cap')
      t.equal((await store.ledger.wallet(account)).held, 37n * UNIT, 'held = the admitted holds only')
      const day = (await store.ledger.keyUsage('key-race', '2000-01-01')).find((r) => r.kind === 'spend')
      t.equal(day?.held, 37n * UNIT, 'the day bucket reserves exactly the admitted holds')
    })
  })
}
