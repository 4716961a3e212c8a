// The bounded account (issue 25), a LedgerStore contract run against SQLite and PostgreSQL: a
// settle posts the reported cost down to the account's bound (floor − overdraft) and no lower,
// never into the reservations of the account's other open holds; the part beyond is recorded
// (entry, hold row) as unrecovered, and the wallet refuses every hold until a top-up. Two
// stores on one database (two PostgreSQL pools, two SQLite connections on one file) settling
// on one wallet at once never take it past the bound.
import pg from 'pg'
import t, { type Test } from 'tap'
import type { HoldResult, SettleResult, Store } from '../plugins/foundation/store/index.js'
import type { HoldCaps } from '../plugins/foundation/store/ledger/index.js'
import { allEntries, ledgerFacts, storedBound } from './helpers/ledger.js'
import { ManualClock, pgTestBackend, TEST_DATABASE_URL, testBackends } from './helpers/store.js'

const TTL = 600_000

function idOf (r: HoldResult): string {
  if (!r.ok) throw new Error(`expected an admitted hold, got ${r.error}`)
  return r.holdId
}

/** The outcome columns of a hold row, read from the database (the contract returns no hold rows). */
async function holdRow (store: Store, holdId: string): Promise<{ status: string, posted: bigint | null, overage: bigint | null, unrecovered: bigint | null }> {
  const sql = 'SELECT status, posted_amount, overage, unrecovered FROM holds WHERE id = $1'
  type Row = { status: string, posted_amount: bigint | string | null, overage: bigint | string | null, unrecovered: bigint | string | null }
  const row: Row | undefined = store.backend.kind === 'sqlite'
    ? store.backend.db.prepare<[string], Row>(sql.replace('$1', '?')).get(holdId)
    : (await store.backend.pool.query<Row>(sql, [holdId])).rows[0]
  if (!row) throw new Error(`no hold ${holdId}`)
  const big = (v: bigint | string | null): bigint | null => (v === null ? null : BigInt(v))
  return { status: row.status, posted: big(row.posted_amount), overage: big(row.overage), unrecovered: big(row.unrecovered) }
}

for (const backend of testBackends()) {
  t.test(`bounded account (${backend.name})`, async (t) => {
    t.teardown(() => backend.cleanup())
    const clock = new ManualClock('2030-01-01T00:00:00.000Z')
    const store: Store = await backend.open({ clock })
    // A second store on the same database: another gateway instance.
    const other: Store = await backend.open({ clock })
    const { ledger } = store
    let n = 0

    async function funded (amount: bigint): Promise<string> {
      const { id } = await store.accounts.create({ name: `bounded ${++n}` })
      if (amount > 0n) await ledger.credit({ accountId: id, amount, kind: 'topup', postingId: `fund-${id}` })
      return id
    }
    const hold = async (accountId: string, amount: bigint, floor = 0n, s: Store = store): Promise<HoldResult> =>
      await s.ledger.hold({ accountId, amount, floor, requestId: `req-${++n}`, ttlMs: TTL })
    const settle = async (holdId: string, amount: bigint, s: Store = store): Promise<SettleResult> =>
      await s.ledger.settle({ holdId, amount, requestId: `req-${++n}` })

    /** balance == Σ entries, held == Σ open holds, available ≥ the stored bound. */
    async function consistent (t: Test, accountId: string): Promise<void> {
      const f = await ledgerFacts(store, accountId)
      t.equal(f.balance, f.entriesSum, 'balance is the sum of the entries')
      t.equal(f.held, f.openHoldsSum, 'held is the sum of the open holds')
      const bound = await storedBound(store, accountId)
      t.ok(bound === null || f.available >= bound, `available ${f.available} is not below the bound ${String(bound)}`)
    }

    t.test('a settle above the bound posts down to it; the rest is unrecovered, on the entry and the hold row', async (t) => {
      const id = await funded(1000n)
      const a = idOf(await hold(id, 100n))
      t.same(await settle(a, 5000n), { posted: 1000n, released: 0n, overage: 900n, unrecovered: 4000n, duplicate: false })
      t.equal((await ledger.wallet(id)).balance, 0n, 'exactly at the bound of 0')
      const [charge] = (await allEntries(store, id)).filter((e) => e.kind === 'charge')
      t.match(charge, { amount: -1000n, overage: 900n, unrecovered: 4000n, postingId: `post:${a}` }, 'the receipt: posted, overage, unrecovered')
      t.same(await holdRow(store, a), { status: 'posted', posted: 100n, overage: 900n, unrecovered: 4000n }, 'the hold row says the same')
      const fit = await funded(1000n)
      const b = idOf(await hold(fit, 100n))
      t.same(await settle(b, 60n), { posted: 60n, released: 40n, overage: 0n, unrecovered: 0n, duplicate: false })
      t.same(await holdRow(store, b), { status: 'posted', posted: 60n, overage: null, unrecovered: null }, 'nothing marked when it fit')
      t.equal((await ledger.wallet(fit)).unrecoveredAt, null, 'a charge that fit sets no refusal')
      const empty = await funded(0n)
      const zero = idOf(await hold(empty, 0n))
      t.same(await settle(zero, 500n), { posted: 0n, released: 0n, overage: 0n, unrecovered: 500n, duplicate: false }, 'a hold of 0 at the bound posts nothing')
      t.match((await allEntries(store, empty)).find((e) => e.holdId === zero), { amount: 0n, overage: null, unrecovered: 500n }, 'and is still a charge entry, its receipt')
      await consistent(t, id)
      await consistent(t, fit)
      await consistent(t, empty)
    })

    t.test('the other open holds stay backed', async (t) => {
      const id = await funded(1000n)
      const small = idOf(await hold(id, 100n))
      const big = idOf(await hold(id, 300n))
      const third = idOf(await hold(id, 50n))
      // B − (H − h) − bound = 1000 − (450 − 100) − 0 = 650.
      t.same(await settle(small, 5000n), { posted: 650n, released: 0n, overage: 550n, unrecovered: 4350n, duplicate: false })
      t.same(await ledger.wallet(id), { accountId: id, balance: 350n, held: 350n, available: 0n, unrecoveredAt: clock.now() })
      t.same(await settle(big, 300n), { posted: 300n, released: 0n, overage: 0n, unrecovered: 0n, duplicate: false }, 'the reserved 300 is there')
      t.same(await settle(third, 80n), { posted: 50n, released: 0n, overage: 0n, unrecovered: 30n, duplicate: false }, 'its own hold, nothing above')
      t.equal((await ledger.wallet(id)).balance, 0n)
      await consistent(t, id)
    })

    t.test('a negative bound (floor − overdraft) is honoured by holds and settles alike', async (t) => {
      const id = await funded(1000n)
      // floor 200, overdraft 700: bound −500.
      t.same(await hold(id, 1501n, -500n), { ok: false, error: 'insufficient_funds' }, 'a hold may reach the bound, not pass it')
      const a = idOf(await hold(id, 100n, -500n))
      t.same(await settle(a, 9000n), { posted: 1500n, released: 0n, overage: 1400n, unrecovered: 7500n, duplicate: false })
      t.equal((await ledger.wallet(id)).balance, -500n, 'down to the overdraft, not below')
      const positive = await funded(1000n)
      const b = idOf(await hold(positive, 100n, 300n))
      t.same(await settle(b, 9000n), { posted: 700n, released: 0n, overage: 600n, unrecovered: 8300n, duplicate: false }, 'a positive floor keeps its reserve')
      await consistent(t, id)
      await consistent(t, positive)
    })

    t.test('the bound is that of the latest admitted hold; open holds stay backed when it rises', async (t) => {
      const id = await funded(1000n)
      const early = idOf(await hold(id, 200n, -500n))
      t.equal(await storedBound(store, id), -500n)
      // The tier lost its overdraft: the next hold is checked at 0 and makes 0 the bound.
      const late = idOf(await hold(id, 300n, 0n))
      t.equal(await storedBound(store, id), 0n)
      t.same(await hold(id, 501n, 0n), { ok: false, error: 'insufficient_funds' }, 'refused at the new bound')
      t.equal(await storedBound(store, id), 0n, 'a refused hold leaves the bound alone')
      t.same(await settle(early, 2000n), { posted: 700n, released: 0n, overage: 500n, unrecovered: 1300n, duplicate: false }, 'settled at the new bound, still above its hold')
      t.same(await settle(late, 300n), { posted: 300n, released: 0n, overage: 0n, unrecovered: 0n, duplicate: false })
      t.equal((await ledger.wallet(id)).balance, 0n)
      await consistent(t, id)
    })

    t.test('an unrecovered overage refuses every hold until a top-up; a grant or a release does not unlock it', async (t) => {
      const id = await funded(1000n)
      const kept = idOf(await hold(id, 400n))
      const over = idOf(await hold(id, 100n))
      t.same(await settle(over, 10_000n), { posted: 600n, released: 0n, overage: 500n, unrecovered: 9400n, duplicate: false })
      const refused = { ok: false, error: 'topup_required' }
      t.same(await hold(id, 0n), refused, 'not even a hold of 0')
      t.same(await hold(id, 1n, -1_000_000n), refused, 'nor one an overdraft would cover')
      t.same(await ledger.release(kept), { released: 400n, duplicate: false })
      t.same(await hold(id, 1n), refused, 'the released reservation does not unlock it')
      await ledger.credit({ accountId: id, amount: 5000n, kind: 'grant', postingId: `grant-${id}` })
      t.same(await hold(id, 1n), refused, 'a grant does not unlock it')
      t.not((await ledger.wallet(id)).unrecoveredAt, null)
      await ledger.credit({ accountId: id, amount: 1n, kind: 'topup', postingId: `topup-${id}` })
      t.equal((await ledger.wallet(id)).unrecoveredAt, null, 'a top-up clears it')
      t.ok((await hold(id, 100n)).ok, 'holds are admitted again')
      await consistent(t, id)
    })

    t.test('a capped hold is refused the same way, and its key counts what was posted', async (t) => {
      const id = await funded(1000n)
      const caps: HoldCaps = { keyId: `key-${id}`, timezone: 'UTC', quota: 100_000n, dailySpendCap: null, monthlySpendCap: null, dailyImageCap: null, images: 0 }
      const h = await ledger.hold({ accountId: id, amount: 100n, floor: 0n, requestId: 'capped', ttlMs: TTL, caps })
      t.same(await settle(idOf(h), 3000n), { posted: 1000n, released: 0n, overage: 900n, unrecovered: 2000n, duplicate: false })
      const usage = await ledger.keyUsage(caps.keyId, '2030-01-01')
      t.same(usage.find((u) => u.kind === 'total'), { kind: 'total', period: '', used: 1000n, held: 0n }, 'used is the posted 1000, not the 3000 asked')
      t.same(await ledger.hold({ accountId: id, amount: 0n, floor: 0n, requestId: 'capped 2', ttlMs: TTL, caps }), { ok: false, error: 'topup_required' })
      await consistent(t, id)
    })

    t.test('exactly once with an unrecovered part; after expiry nothing is posted or marked', async (t) => {
      const id = await funded(1000n)
      const a = idOf(await hold(id, 100n))
      const raced = await Promise.all([settle(a, 5000n), settle(a, 5000n, other), settle(a, 7000n), ledger.release(a)])
      t.equal(raced.filter((r) => !r.duplicate).length, 1, 'one of four concurrent closes, from two stores, wins')
      const entries = (await allEntries(store, id)).filter((e) => e.holdId === a)
      t.ok(entries.length <= 1, 'at most one entry for the hold')
      const balance = (await ledger.wallet(id)).balance
      t.equal(balance, 1000n + (entries[0]?.amount ?? 0n), 'the balance lost what the entry says')
      t.ok(balance >= 0n, `never below the bound (${balance})`)
      const b = await funded(1000n)
      const expiring = idOf(await store.ledger.hold({ accountId: b, amount: 100n, floor: 0n, requestId: 'late', ttlMs: 1000 }))
      clock.advance(1000)
      t.same(await settle(expiring, 5000n), { posted: 0n, released: 100n, overage: 0n, unrecovered: 0n, duplicate: false }, 'expired: nothing posted, nothing unrecovered')
      t.equal((await ledger.wallet(b)).unrecoveredAt, null, 'and no refusal')
      t.same(await holdRow(store, expiring), { status: 'expired', posted: null, overage: null, unrecovered: null })
      await consistent(t, id)
      await consistent(t, b)
    })

    t.test('settles of one batch on one wallet add up as if one by one', async (t) => {
      const id = await funded(1000n)
      const holds = await Promise.all([100n, 200n, 50n, 300n].map(async (a) => idOf(await hold(id, a))))
      // In one tick: one batch. Serially, from a slack of 1000 − 650 = 350: 100 asks 100 (fits);
      // 200 asks 900 → posts 200 + 350; 50 released → slack 50; 300 asks 400 → posts 350.
      const [a, b, c, d] = holds as [string, string, string, string]
      const [ra, rb, rc, rd] = await Promise.all([settle(a, 100n), settle(b, 900n), ledger.release(c), settle(d, 400n)])
      t.same([ra, rb, rd].map((r) => [r.posted, r.unrecovered]), [[100n, 0n], [550n, 350n], [350n, 50n]], 'the answers of the same settles one by one')
      t.same(rc, { released: 50n, duplicate: false })
      t.equal((await ledger.wallet(id)).balance, 0n)
      await consistent(t, id)
    })

    t.test('two stores settling on one wallet at once never pass the bound', async (t) => {
      const BOUND = -2000n
      const id = await funded(10_000n)
      const stores = [store, other]
      // 60 holds of 100 (6,000 held), then all settled at once, alternating stores, each asking
      // far above its hold: together the wallet can pay 12,000 (down to −2,000), no more.
      const holds = await Promise.all(Array.from({ length: 60 }, async (_, i) => idOf(await hold(id, 100n, BOUND, stores[i % 2]))))
      const asked = holds.map((_, i) => 100n + BigInt((i * 7919) % 1000))
      const results = await Promise.all(holds.map(async (h, i) => await settle(h, asked[i] ?? 0n, stores[(i + 1) % 2])))
      const posted = results.reduce((sum, r) => sum + r.posted, 0n)
      t.ok(results.every((r, i) => !r.duplicate && r.posted + r.unrecovered === asked[i]), 'posted + unrecovered = asked, for each')
      t.ok(results.every((r) => r.posted >= 100n), 'each posted at least its hold')
      const total = asked.reduce((a, b) => a + b, 0n)
      t.equal(posted, total < 12_000n ? total : 12_000n, 'what the wallet could pay, exactly')
      const w = await ledger.wallet(id)
      t.ok(w.balance >= BOUND, `balance ${w.balance} ≥ bound ${BOUND}`)
      t.equal(w.balance, 10_000n - posted)
      // Holds and settles of both stores interleaved: top up, then hold-and-settle storms.
      await ledger.credit({ accountId: id, amount: 5000n, kind: 'topup', postingId: `again-${id}` })
      const storm = await Promise.all(Array.from({ length: 80 }, async (_, i) => {
        const s = stores[i % 2] as Store
        const r = await hold(id, 50n, BOUND, s)
        if (!r.ok) return 0n
        return (await settle(r.holdId, 50n + BigInt((i * 31) % 300), stores[(i + 1) % 2])).posted
      }))
      const after = await ledger.wallet(id)
      t.ok(after.balance >= BOUND, `after the storm: ${after.balance} ≥ ${BOUND}`)
      t.equal(after.balance, w.balance + 5000n - storm.reduce((a, b) => a + b, 0n), 'the balance is what the answers say')
      await consistent(t, id)
    })
  })
}

// PostgreSQL, two instances whose settle batches queue on one wallet lock: the later batch was
// planned (its snapshot taken) before the earlier one committed, so its view of the holds is
// stale. A hold the earlier batch closed must drop out of the later batch's bound, or its
// released reservation would be counted twice and the later batch would post past the bound.
t.test('PostgreSQL: a batch that waited for another instance\'s batch sees the holds it closed', async (t) => {
  const backend = pgTestBackend()
  t.teardown(() => backend.cleanup())
  const a = await backend.open()
  const b = await backend.open()
  const { id } = await a.accounts.create({ name: 'queued' })
  await a.ledger.credit({ accountId: id, amount: 1000n, kind: 'topup', postingId: `fund-${id}` })
  const x = idOf(await a.ledger.hold({ accountId: id, amount: 400n, floor: 0n, requestId: 'x', ttlMs: TTL }))
  const y = idOf(await a.ledger.hold({ accountId: id, amount: 100n, floor: 0n, requestId: 'y', ttlMs: TTL }))
  const blocker = new pg.Client({ connectionString: TEST_DATABASE_URL })
  await blocker.connect()
  t.teardown(() => blocker.end())
  await blocker.query(`SET search_path TO "${backend.location}"`)
  await blocker.query('BEGIN')
  await blocker.query('SELECT 1 FROM wallets WHERE account_id = $1 FOR NO KEY UPDATE', [id])
  /** Waits until `n` sessions wait, directly or behind another waiter, on the blocker's lock. */
  const waiting = async (n: number): Promise<void> => {
    for (let i = 0; i < 500; i++) {
      const r = await blocker.query<{ n: number }>(`WITH RECURSIVE blocked (pid) AS (
          SELECT pid FROM pg_stat_activity WHERE pg_backend_pid() = ANY (pg_blocking_pids(pid))
          UNION SELECT a.pid FROM pg_stat_activity a, blocked b WHERE b.pid = ANY (pg_blocking_pids(a.pid))
        ) SELECT count(*)::int AS n FROM blocked`)
      if ((r.rows[0]?.n ?? 0) >= n) return
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
    throw new Error(`${n} batches never queued on the wallet lock`)
  }
  // Instance A closes x (posting nothing); instance B's batch, queued behind it, settles x again
  // and y far above its hold.
  const first = a.ledger.settle({ holdId: x, amount: 0n, requestId: 'x' })
  await waiting(1)
  const second = Promise.all([b.ledger.settle({ holdId: x, amount: 0n, requestId: 'x' }), b.ledger.settle({ holdId: y, amount: 10_000n, requestId: 'y' })])
  await waiting(2)
  await blocker.query('COMMIT')
  t.same(await first, { posted: 0n, released: 400n, overage: 0n, unrecovered: 0n, duplicate: false })
  const [again, over] = await second
  t.equal(again.duplicate, true, 'x was closed by the first batch')
  t.same(over, { posted: 1000n, released: 0n, overage: 900n, unrecovered: 9000n, duplicate: false }, 'y posts what the wallet has: 1000, not 1400')
  t.equal((await a.ledger.wallet(id)).balance, 0n, 'the balance stops at the bound')
})
