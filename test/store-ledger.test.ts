// LedgerStore contract, run against SQLite and PostgreSQL.
import t, { type Test } from 'tap'
import type { HoldResult, Store } from '../plugins/foundation/store/index.js'
import { PostingConflictError, UnknownAccountError, UnknownHoldError } from '../plugins/foundation/store/index.js'
import { allEntries, execSql, ledgerFacts } from './helpers/ledger.js'
import { ManualClock, testBackends } from './helpers/store.js'

const TTL = 60_000

function holdId (result: HoldResult): string {
  if (!result.ok) throw new Error(`expected an admitted hold, got ${result.error}`)
  return result.holdId
}

for (const backend of testBackends()) {
  t.test(`ledger (${backend.name})`, async (t) => {
    t.teardown(() => backend.cleanup())
    const clock = new ManualClock('2030-01-01T00:00:00.000Z')
    const store: Store = await backend.open({ clock })
    const { ledger } = store

    async function funded (amount: bigint): Promise<string> {
      const { id } = await store.accounts.create({ name: 'wallet owner' })
      if (amount > 0n) await ledger.credit({ accountId: id, amount, kind: 'topup', postingId: `fund-${id}` })
      return id
    }

    const hold = (accountId: string, amount: bigint, floor = 0n, ttlMs = TTL) =>
      ledger.hold({ accountId, amount, floor, requestId: `req-${amount}`, ttlMs })

    /** balance == Σ entries, held == Σ open holds. */
    async function consistent (t: Test, accountId: string): Promise<void> {
      const f = await ledgerFacts(store, accountId)
      t.equal(f.balance, f.entriesSum, 'balance is the sum of the entries')
      t.equal(f.held, f.openHoldsSum, 'held is the sum of the open holds')
      t.equal(f.available, f.balance - f.held)
    }

    t.test('a wallet nobody credited reads as zero', async (t) => {
      const id = await funded(0n)
      t.same(await ledger.wallet(id), { accountId: id, balance: 0n, held: 0n, available: 0n, unrecoveredAt: null })
      t.same(await ledger.entries(id, { limit: 10 }), [])
      t.same(await ledger.openHolds(id), [])
    })

    t.test('credits: top-up and grant, idempotent by postingId', async (t) => {
      const id = await funded(0n)
      t.same(await ledger.credit({ accountId: id, amount: 25_000_000_000n, kind: 'topup', postingId: 'stripe:pi_1' }), {
        balance: 25_000_000_000n,
        duplicate: false,
      })
      t.same(
        await ledger.credit({ accountId: id, amount: 25_000_000_000n, kind: 'topup', postingId: 'stripe:pi_1' }),
        { balance: 25_000_000_000n, duplicate: true },
        'a retried top-up changes nothing'
      )
      t.same(await ledger.credit({ accountId: id, amount: 1n, kind: 'grant', postingId: 'welcome', note: 'hi' }), {
        balance: 25_000_000_001n,
        duplicate: false,
      })
      const both = await Promise.all(
        [1, 2, 3, 4].map(() => ledger.credit({ accountId: id, amount: 5n, kind: 'grant', postingId: 'raced' }))
      )
      t.equal(both.filter((r) => !r.duplicate).length, 1, 'concurrent retries credit once')
      t.equal((await ledger.wallet(id)).balance, 25_000_000_006n)
      const entries = await allEntries(store, id)
      t.same(
        entries.map((e) => [e.kind, e.amount, e.postingId]).sort(),
        [
          ['grant', 1n, 'welcome'],
          ['grant', 5n, 'raced'],
          ['topup', 25_000_000_000n, 'stripe:pi_1'],
        ].sort()
      )
      const welcome = entries.find((e) => e.postingId === 'welcome')
      t.match(welcome, { accountId: id, note: 'hi', holdId: null, requestId: null, createdAt: clock.now() })
      t.match(welcome?.id, /^entry_/)
      await consistent(t, id)
    })

    t.test('credits: misuse throws and changes nothing', async (t) => {
      const id = await funded(100n)
      const other = await funded(0n)
      const before = await ledgerFacts(store, id)
      await t.rejects(
        ledger.credit({ accountId: id, amount: 99n, kind: 'topup', postingId: `fund-${id}` }),
        PostingConflictError,
        'same postingId, other amount'
      )
      await t.rejects(ledger.credit({ accountId: other, amount: 100n, kind: 'topup', postingId: `fund-${id}` }), PostingConflictError)
      await t.rejects(ledger.credit({ accountId: id, amount: 100n, kind: 'grant', postingId: `fund-${id}` }), PostingConflictError)
      await t.rejects(ledger.credit({ accountId: id, amount: 0n, kind: 'topup', postingId: 'zero' }), RangeError)
      await t.rejects(ledger.credit({ accountId: id, amount: -5n, kind: 'topup', postingId: 'neg' }), RangeError)
      await t.rejects(ledger.credit({ accountId: id, amount: 5n, kind: 'topup', postingId: 'post:hold_x' }), {
        message: /reserved/,
      })
      await t.rejects(
        ledger.credit({ accountId: id, amount: 5n, kind: 'charge' as 'topup', postingId: 'c' }),
        RangeError,
        'credits are top-ups or grants'
      )
      await t.rejects(
        ledger.credit({ accountId: 'acct_missing', amount: 5n, kind: 'topup', postingId: 'ghost' }),
        UnknownAccountError
      )
      t.same(await ledgerFacts(store, id), before)
      t.same(await ledger.wallet(other), { accountId: other, balance: 0n, held: 0n, available: 0n, unrecoveredAt: null })
    })

    t.test('hold admits exactly while available ≥ floor + amount (floor 0)', async (t) => {
      const id = await funded(1000n)
      t.ok((await hold(id, 400n)).ok)
      t.ok((await hold(id, 400n)).ok)
      t.same(await hold(id, 201n), { ok: false, error: 'insufficient_funds' }, 'one over')
      const exact = await hold(id, 200n)
      t.ok(exact.ok, 'exactly down to the floor')
      t.ok((await hold(id, 0n)).ok, 'a zero hold fits at the floor')
      t.same(await hold(id, 1n), { ok: false, error: 'insufficient_funds' })
      t.same(await ledger.wallet(id), { accountId: id, balance: 1000n, held: 1000n, available: 0n, unrecoveredAt: null })
      const open = await ledger.openHolds(id)
      // Oldest first by (created_at, id): holds of one millisecond come in id order.
      t.same(open.map((h) => h.amount).sort(), [400n, 400n, 200n, 0n].sort())
      t.same(open.find((h) => h.amount === 200n), { id: holdId(exact), amount: 200n, expiresAt: new Date(clock.now().getTime() + TTL), requestId: 'req-200' })
      await consistent(t, id)
    })

    t.test('hold with a positive floor keeps that much available', async (t) => {
      const id = await funded(1000n)
      t.same(await hold(id, 901n, 100n), { ok: false, error: 'insufficient_funds' })
      t.ok((await hold(id, 900n, 100n)).ok)
      t.same(await hold(id, 1n, 100n), { ok: false, error: 'insufficient_funds' })
      t.ok((await hold(id, 0n, 100n)).ok)
      t.ok((await hold(id, 100n, 0n)).ok, 'a lower floor still admits')
      t.equal((await ledger.wallet(id)).available, 0n)
      const poor = await funded(50n)
      t.same(await hold(poor, 0n, 100n), { ok: false, error: 'insufficient_funds' }, 'already under the floor')
      await consistent(t, id)
    })

    t.test('hold against a wallet that does not exist yet: balance 0', async (t) => {
      const id = await funded(0n)
      t.same(await hold(id, 1n), { ok: false, error: 'insufficient_funds' })
      t.same(await ledger.wallet(id), { accountId: id, balance: 0n, held: 0n, available: 0n, unrecoveredAt: null })
      t.ok((await hold(id, 0n)).ok, 'a zero hold fits a zero balance')
      const credit = await funded(0n)
      t.ok((await hold(credit, 500n, -500n)).ok, 'a negative floor is a credit line')
      t.same(await hold(credit, 1n, -500n), { ok: false, error: 'insufficient_funds' })
      t.same(await ledger.wallet(credit), { accountId: credit, balance: 0n, held: 500n, available: -500n, unrecoveredAt: null })
      await t.rejects(hold('acct_missing', 0n), UnknownAccountError)
      t.same(await hold('acct_missing', 10n), { ok: false, error: 'insufficient_funds' })
      const [zero, ten] = await Promise.allSettled([hold('acct_missing', 0n), hold('acct_missing', 10n)])
      t.match(zero, { status: 'rejected', reason: { name: 'UnknownAccountError' } }, 'same answers within one batch')
      t.same(ten, { status: 'fulfilled', value: { ok: false, error: 'insufficient_funds' } })
      await consistent(t, credit)
    })

    t.test('hold input is checked before anything runs', async (t) => {
      const id = await funded(100n)
      await t.rejects(hold(id, -1n), RangeError)
      await t.rejects(hold(id, 1n, 0n, 0), RangeError)
      await t.rejects(hold(id, 1n, 0n, 1.5), RangeError)
      await t.rejects(ledger.hold({ accountId: id, amount: 1 as unknown as bigint, floor: 0n, requestId: 'r', ttlMs: 1 }), RangeError)
      await t.rejects(ledger.hold({ accountId: id, amount: 1n, floor: 0n, requestId: '', ttlMs: 1 }), RangeError)
      t.same(await ledger.openHolds(id), [])
    })

    t.test('settle posts the amount and releases the rest of the hold', async (t) => {
      const id = await funded(10_000n)
      const a = holdId(await hold(id, 3000n))
      t.same(await ledger.settle({ holdId: a, amount: 1200n, requestId: 'req-a', note: 'gpt: 12 tokens' }), {
        posted: 1200n,
        released: 1800n,
        overage: 0n,
        unrecovered: 0n,
        duplicate: false,
      })
      t.same(await ledger.wallet(id), { accountId: id, balance: 8800n, held: 0n, available: 8800n, unrecoveredAt: null })
      const b = holdId(await hold(id, 500n))
      t.same(await ledger.settle({ holdId: b, amount: 900n, requestId: 'req-b' }), {
        posted: 900n,
        released: 0n,
        overage: 400n,
        unrecovered: 0n,
        duplicate: false,
      }, 'a charge above the hold is posted in full, not capped')
      const c = holdId(await hold(id, 500n))
      t.same(await ledger.settle({ holdId: c, amount: 0n, requestId: 'req-c' }), {
        posted: 0n,
        released: 500n,
        overage: 0n,
        unrecovered: 0n,
        duplicate: false,
      })
      const exact = holdId(await hold(id, 700n))
      t.same(await ledger.settle({ holdId: exact, amount: 700n, requestId: 'req-d' }), {
        posted: 700n,
        released: 0n,
        overage: 0n,
        unrecovered: 0n,
        duplicate: false,
      })
      t.same(await ledger.wallet(id), { accountId: id, balance: 7200n, held: 0n, available: 7200n, unrecoveredAt: null })
      const charges = (await allEntries(store, id)).filter((e) => e.kind === 'charge')
      const charge = charges.find((e) => e.holdId === a)
      t.match(charge, { accountId: id, amount: -1200n, postingId: `post:${a}`, requestId: 'req-a', note: 'gpt: 12 tokens', overage: null })
      t.match(charges.find((e) => e.holdId === b), { amount: -900n, postingId: `post:${b}`, overage: 400n }, 'one entry, its overage marked')
      t.same(charges.map((e) => e.amount).sort(), [-1200n, -900n, -700n, 0n].sort())
      t.same(charges.filter((e) => e.holdId !== b).map((e) => e.overage), [null, null, null], 'no mark when the charge fit')
      t.same(await ledger.openHolds(id), [])
      await consistent(t, id)
    })

    t.test('a hold closes once: settle twice, release after settle, settle after release', async (t) => {
      const id = await funded(10_000n)
      const a = holdId(await hold(id, 1000n))
      const b = holdId(await hold(id, 1000n))
      const c = holdId(await hold(id, 1000n))
      t.same(await ledger.settle({ holdId: a, amount: 400n, requestId: 'r' }), {
        posted: 400n,
        released: 600n,
        overage: 0n,
        unrecovered: 0n,
        duplicate: false,
      })
      t.same(await ledger.release(b), { released: 1000n, duplicate: false })
      const snapshot = await ledgerFacts(store, id)
      const duplicate = { posted: 0n, released: 0n, overage: 0n, unrecovered: 0n, duplicate: true }
      t.same(await ledger.settle({ holdId: a, amount: 400n, requestId: 'r' }), duplicate, 'settle twice')
      t.same(await ledger.settle({ holdId: a, amount: 999n, requestId: 'r' }), duplicate, 'settle again, other amount')
      t.same(await ledger.release(a), { released: 0n, duplicate: true }, 'release after settle')
      t.same(await ledger.settle({ holdId: b, amount: 1n, requestId: 'r' }), duplicate, 'settle after release')
      t.same(await ledger.release(b), { released: 0n, duplicate: true }, 'release twice')
      t.same(await ledgerFacts(store, id), snapshot, 'duplicates changed nothing')
      const raced = await Promise.all([
        ledger.settle({ holdId: c, amount: 300n, requestId: 'r' }),
        ledger.settle({ holdId: c, amount: 300n, requestId: 'r' }),
        ledger.release(c),
        ledger.settle({ holdId: c, amount: 900n, requestId: 'r' }),
      ])
      t.equal(raced.filter((r) => !r.duplicate).length, 1, 'concurrent closes of one hold: exactly one wins')
      t.equal((await allEntries(store, id)).filter((e) => e.holdId === c).length, raced[0]?.duplicate ? 0 : 1)
      await consistent(t, id)
    })

    // The rule changed deliberately (issue 25): a charge above its hold used to be posted in full
    // even below the floor (a 0.10 wallet reached −74.90). Now it is posted down to the account's
    // bound, and the rest is recorded as unrecovered, not taken from the tenant.
    t.test('an overage is posted down to the bound, never below; the rest is unrecovered', async (t) => {
      const id = await funded(1000n)
      const a = holdId(await hold(id, 900n, 100n))
      t.same(await ledger.settle({ holdId: a, amount: 1500n, requestId: 'over' }), {
        posted: 900n,
        released: 0n,
        overage: 0n,
        unrecovered: 600n,
        duplicate: false,
      }, 'the hold took the wallet to its floor: nothing above it fits')
      const wallet = await ledger.wallet(id)
      t.equal(wallet.balance, 100n, 'the balance stops at the floor')
      t.same(wallet.unrecoveredAt, clock.now(), 'the wallet records when a cost went unrecovered')
      const charge = (await allEntries(store, id)).find((e) => e.holdId === a)
      t.match(charge, { kind: 'charge', amount: -900n, overage: null, unrecovered: 600n, postingId: `post:${a}` })
      const b = await funded(1000n)
      const over = holdId(await hold(b, 100n, 0n))
      t.same(await ledger.settle({ holdId: over, amount: 1500n, requestId: 'over' }), {
        posted: 1000n,
        released: 0n,
        overage: 900n,
        unrecovered: 500n,
        duplicate: false,
      }, 'the part above the hold that the balance covers is posted as overage, the rest unrecovered')
      t.equal((await ledger.wallet(b)).balance, 0n)
      t.match((await allEntries(store, b)).find((e) => e.holdId === over), { amount: -1000n, overage: 900n, unrecovered: 500n })
      await consistent(t, id)
      await consistent(t, b)
    })

    t.test('an overage is posted exactly once, retried or raced', async (t) => {
      const id = await funded(10_000n)
      const a = holdId(await hold(id, 100n))
      t.same(await ledger.settle({ holdId: a, amount: 250n, requestId: 'r' }), { posted: 250n, released: 0n, overage: 150n, unrecovered: 0n, duplicate: false })
      const snapshot = await ledgerFacts(store, id)
      const duplicate = { posted: 0n, released: 0n, overage: 0n, unrecovered: 0n, duplicate: true }
      t.same(await ledger.settle({ holdId: a, amount: 250n, requestId: 'r' }), duplicate, 'the same settle again')
      t.same(await ledger.settle({ holdId: a, amount: 9999n, requestId: 'r' }), duplicate, 'a bigger one')
      t.same(await ledger.release(a), { released: 0n, duplicate: true })
      t.same(await ledgerFacts(store, id), snapshot, 'retries changed nothing')
      const b = holdId(await hold(id, 100n))
      const raced = await Promise.all([1, 2, 3, 4].map(() => ledger.settle({ holdId: b, amount: 300n, requestId: 'r' })))
      t.equal(raced.filter((r) => !r.duplicate).length, 1, 'one of four concurrent settles posts')
      t.same(raced.find((r) => !r.duplicate), { posted: 300n, released: 0n, overage: 200n, unrecovered: 0n, duplicate: false })
      const ofB = (await allEntries(store, id)).filter((e) => e.holdId === b)
      t.same(ofB.map((e) => [e.amount, e.overage]), [[-300n, 200n]], 'one entry for the hold, overage included')
      t.equal((await ledger.wallet(id)).balance, 10_000n - 250n - 300n)
      await consistent(t, id)
    })

    t.test('concurrent settles with and without overage add up exactly', async (t) => {
      const id = await funded(1_000_000n)
      const amounts = Array.from({ length: 40 }, (_, i) => BigInt(1000 + i))
      const holds = await Promise.all(amounts.map(async (amount) => holdId(await hold(id, amount))))
      // Every third charge fits its hold; the others exceed it by up to 20,000.
      const charges = amounts.map((amount, i) => (i % 3 === 0 ? amount - 7n : amount + BigInt(i) * 500n))
      const results = await Promise.all(holds.map((h, i) => ledger.settle({ holdId: h, amount: charges[i] ?? 0n, requestId: `c${i}` })))
      const charged = charges.reduce((sum, c) => sum + c, 0n)
      const overages = charges.reduce((sum, c, i) => sum + (c > (amounts[i] ?? 0n) ? c - (amounts[i] ?? 0n) : 0n), 0n)
      t.same(results.map((r) => r.posted), charges, 'each settle posted its whole amount')
      t.equal(results.reduce((sum, r) => sum + r.overage, 0n), overages, 'the overages answered add up')
      t.same(await ledger.wallet(id), { accountId: id, balance: 1_000_000n - charged, held: 0n, available: 1_000_000n - charged, unrecoveredAt: null })
      const entries = await allEntries(store, id)
      t.equal(entries.reduce((sum, e) => sum + (e.overage ?? 0n), 0n), overages, 'the entries mark the same overages')
      await consistent(t, id)
    })

    t.test('unknown holds throw', async (t) => {
      await t.rejects(ledger.settle({ holdId: 'hold_missing', amount: 1n, requestId: 'r' }), UnknownHoldError)
      await t.rejects(ledger.release('hold_missing'), UnknownHoldError)
      await t.rejects(ledger.settle({ holdId: '', amount: 1n, requestId: 'r' }), RangeError)
      const id = await funded(100n)
      const a = holdId(await hold(id, 10n))
      await t.rejects(ledger.settle({ holdId: a, amount: -1n, requestId: 'r' }), RangeError)
      const [known, unknown] = await Promise.allSettled([
        ledger.settle({ holdId: a, amount: 10n, requestId: 'r' }),
        ledger.settle({ holdId: 'hold_missing_too', amount: 10n, requestId: 'r' }),
      ])
      t.same(known, { status: 'fulfilled', value: { posted: 10n, released: 0n, overage: 0n, unrecovered: 0n, duplicate: false } })
      t.equal(unknown?.status, 'rejected', 'one unknown hold fails alone, not its batch')
    })

    t.test('reapExpired releases only expired holds; settling an expired hold posts nothing', async (t) => {
      const id = await funded(10_000n)
      const start = clock.now().getTime()
      const short = holdId(await hold(id, 1000n, 0n, 1_000))
      const lapsed = holdId(await hold(id, 2000n, 0n, 1_000))
      const long = holdId(await hold(id, 3000n, 0n, 5_000))
      clock.advance(999)
      t.equal(await ledger.reapExpired(), 0, 'nothing expired 1 ms before')
      clock.advance(1)
      // `lapsed` expired and nobody reaped it yet: settling it posts nothing either, even an
      // amount above the hold (no overage without a live hold).
      t.same(await ledger.settle({ holdId: lapsed, amount: 5000n, requestId: 'late' }), {
        posted: 0n,
        released: 2000n,
        overage: 0n,
        unrecovered: 0n,
        duplicate: false,
      })
      t.equal(await ledger.reapExpired(), 1, 'reaped at its expiry instant')
      t.same(await ledger.openHolds(id), [
        { id: long, amount: 3000n, expiresAt: new Date(start + 5_000), requestId: 'req-3000' },
      ])
      t.same(await ledger.wallet(id), { accountId: id, balance: 10_000n, held: 3000n, available: 7000n, unrecoveredAt: null })
      t.equal(await ledger.reapExpired(), 0, 'reaping again finds nothing')
      const snapshot = await ledgerFacts(store, id)
      t.same(await ledger.settle({ holdId: short, amount: 1000n, requestId: 'late' }), {
        posted: 0n,
        released: 0n,
        overage: 0n,
        unrecovered: 0n,
        duplicate: true,
      }, 'a settle after the reaper posts nothing')
      t.same(await ledger.release(short), { released: 0n, duplicate: true })
      t.same(await ledgerFacts(store, id), snapshot)
      t.same(await ledger.settle({ holdId: long, amount: 100n, requestId: 'in time' }), {
        posted: 100n,
        released: 2900n,
        overage: 0n,
        unrecovered: 0n,
        duplicate: false,
      }, 'an unexpired hold settles normally')
      t.same(await ledger.wallet(id), { accountId: id, balance: 9900n, held: 0n, available: 9900n, unrecoveredAt: null })
      await consistent(t, id)
    })

    t.test('renew moves an open hold\'s expiry forward, so the reaper leaves it and its settle posts', async (t) => {
      const id = await funded(10_000n)
      const start = clock.now().getTime()
      const live = holdId(await hold(id, 4000n, 0n, 1_000))
      clock.advance(900)
      t.same(await ledger.renew(live, 1_000), { renewed: true, expiresAt: new Date(start + 1_900) }, 'now + ttl')
      t.same((await ledger.openHolds(id)).map((h) => h.expiresAt), [new Date(start + 1_900)])
      clock.advance(900)
      t.equal(await ledger.reapExpired(), 0, 'past its first expiry, the renewed hold is not reaped')
      t.same(await ledger.renew(live, 10), { renewed: true, expiresAt: new Date(start + 1_900) }, 'a shorter renewal never moves the expiry back')
      t.same(await ledger.settle({ holdId: live, amount: 3000n, requestId: 'long stream' }), {
        posted: 3000n,
        released: 1000n,
        overage: 0n,
        unrecovered: 0n,
        duplicate: false,
      }, 'settled after its first expiry, the renewed hold posts in full')
      t.same(await ledger.renew(live, 1_000), { renewed: false, expiresAt: null }, 'a closed hold is not renewed')
      await consistent(t, id)
    })

    t.test('renew never revives an expired hold, reaped or not', async (t) => {
      const id = await funded(10_000n)
      const lapsed = holdId(await hold(id, 1000n, 0n, 1_000))
      const reaped = holdId(await hold(id, 2000n, 0n, 1_000))
      clock.advance(1_000)
      t.same(await ledger.renew(lapsed, 60_000), { renewed: false, expiresAt: null }, 'expired, not reaped yet')
      t.equal(await ledger.reapExpired(), 2, 'both are reaped: the late renewal changed nothing')
      t.same(await ledger.renew(reaped, 60_000), { renewed: false, expiresAt: null }, 'reaped')
      t.same(await ledger.openHolds(id), [])
      t.same(await ledger.wallet(id), { accountId: id, balance: 10_000n, held: 0n, available: 10_000n, unrecoveredAt: null })
      await t.rejects(ledger.renew('hold_unknown', 1_000), UnknownHoldError)
      await t.rejects(ledger.renew(lapsed, 0), RangeError, 'ttl must be positive')
      await consistent(t, id)
    })

    t.test('reapExpired from many callers at once releases each hold once', async (t) => {
      const id = await funded(1_000_000n)
      await Promise.all(Array.from({ length: 50 }, (_, i) => hold(id, BigInt(i + 1), 0n, 1_000)))
      clock.advance(1_000)
      const counts = await Promise.all([1, 2, 3, 4].map(() => ledger.reapExpired()))
      t.equal(counts.reduce((a, b) => a + b, 0), 50)
      t.same(await ledger.wallet(id), { accountId: id, balance: 1_000_000n, held: 0n, available: 1_000_000n, unrecoveredAt: null })
    })

    t.test('entries page newest first with a before cursor', async (t) => {
      const id = await funded(0n)
      for (let i = 1; i <= 5; i++) {
        clock.advance(1000)
        await ledger.credit({ accountId: id, amount: BigInt(i), kind: 'grant', postingId: `page-${id}-${i}` })
      }
      const first = await ledger.entries(id, { limit: 2 })
      t.same(first.map((e) => e.amount), [5n, 4n])
      const second = await ledger.entries(id, { limit: 2, before: first[1]?.id ?? '' })
      t.same(second.map((e) => e.amount), [3n, 2n])
      const rest = await ledger.entries(id, { limit: 10, before: second[1]?.id ?? '' })
      t.same(rest.map((e) => e.amount), [1n])
      t.same(await ledger.entries(id, { limit: 10, before: 'entry_unknown' }), [], 'unknown cursor: empty page')
      await t.rejects(ledger.entries(id, { limit: 0 }), RangeError)
      t.same((await allEntries(store, id, 2)).map((e) => e.amount), [5n, 4n, 3n, 2n, 1n])
    })

    t.test('the schema refuses edits to entries and reopened holds', async (t) => {
      const id = await funded(100n)
      const a = holdId(await hold(id, 10n))
      await ledger.settle({ holdId: a, amount: 10n, requestId: 'r' })
      await t.rejects(async () => execSql(store, `UPDATE ledger_entries SET amount = 0 WHERE account_id = '${id}'`))
      await t.rejects(async () => execSql(store, `DELETE FROM ledger_entries WHERE account_id = '${id}'`))
      await t.rejects(async () => execSql(store, `UPDATE holds SET status = 'open', settled_at = NULL, posted_amount = NULL WHERE id = '${a}'`))
      await t.rejects(async () => execSql(store, `UPDATE holds SET status = 'released' WHERE id = '${a}'`))
      await t.rejects(async () => execSql(store, `DELETE FROM holds WHERE id = '${a}'`))
      await t.rejects(async () => execSql(store, `UPDATE wallets SET held = -1 WHERE account_id = '${id}'`), 'held never negative')
      await consistent(t, id)
    })

    t.test('money beyond 2^53 stays exact', async (t) => {
      const id = await funded(0n)
      const big = 10n ** 18n
      await ledger.credit({ accountId: id, amount: big, kind: 'topup', postingId: `big-${id}` })
      await ledger.credit({ accountId: id, amount: 7n, kind: 'topup', postingId: `big7-${id}` })
      const h = holdId(await hold(id, big - 3n))
      t.same(await ledger.settle({ holdId: h, amount: big - 5n, requestId: 'r' }), {
        posted: big - 5n,
        released: 2n,
        overage: 0n,
        unrecovered: 0n,
        duplicate: false,
      })
      t.same(await ledger.wallet(id), { accountId: id, balance: 12n, held: 0n, available: 12n, unrecoveredAt: null })
      await t.rejects(ledger.credit({ accountId: id, amount: big + 1n, kind: 'topup', postingId: 'too-big' }), RangeError)
      await consistent(t, id)
    })
  })
}
