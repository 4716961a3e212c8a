// IdempotencyStore contract, run against SQLite and PostgreSQL: one claim per (account, key),
// atomic under concurrency (two store instances on one database), the lease a crashed
// instance's claim lapses with, the retention of a finished key and its purge.
import t from 'tap'
import type { IdempotencyClaim, Store } from '../plugins/foundation/store/index.js'
import { ManualClock, testBackends } from './helpers/store.js'

const LEASE = 60_000
const RETAIN = 24 * 3600_000

async function count (store: Store): Promise<number> {
  if (store.backend.kind === 'sqlite') {
    const row = store.backend.db.prepare('SELECT count(*) AS n FROM idempotency_keys').get() as { n: bigint }
    return Number(row.n)
  }
  const r = await store.backend.pool.query<{ n: string }>('SELECT count(*) AS n FROM idempotency_keys')
  return Number(r.rows[0]?.n)
}

for (const backend of testBackends()) {
  t.test(`idempotency store (${backend.name})`, async (t) => {
    t.teardown(() => backend.cleanup())
    const clock = new ManualClock('2030-01-01T00:00:00.000Z')
    const store = await backend.open({ clock })
    // A second store on the same database: another gateway instance.
    const other = await backend.open({ clock })
    const idem = store.idempotency
    let n = 0
    const claimOf = (key: string, fingerprint = 'fp-a', accountId = 'acct_1'): IdempotencyClaim =>
      ({ accountId, key, fingerprint, owner: `req_${++n}` })

    t.test('the first claim wins; the same request again is in progress, then completed', async (t) => {
      const first = claimOf('k1')
      t.equal(await idem.claim(first, LEASE), 'claimed')
      t.equal(await idem.claim(claimOf('k1'), LEASE), 'in_progress', 'same fingerprint while running')
      t.equal(await other.idempotency.claim(claimOf('k1'), LEASE), 'in_progress', 'seen from another instance')
      t.equal(await idem.complete(first.owner, RETAIN), true)
      t.equal(await idem.claim(claimOf('k1'), LEASE), 'completed', 'same fingerprint after the end')
    })

    t.test('the record names the original request and the job it created', async (t) => {
      const plain = claimOf('orig-1')
      t.equal(await idem.claim(plain, LEASE), 'claimed')
      t.same(await other.idempotency.original('acct_1', 'orig-1'), { requestId: plain.owner, jobId: null }, 'while running: the request, no job')
      t.equal(await idem.complete(plain.owner, RETAIN), true)
      t.same(await idem.original('acct_1', 'orig-1'), { requestId: plain.owner, jobId: null }, 'finished without a job')
      t.equal(await idem.original('acct_2', 'orig-1'), null, 'another account: nothing')
      t.equal(await idem.original('acct_1', 'no-such-key'), null)

      const create = claimOf('orig-2')
      t.equal(await idem.claim(create, LEASE), 'claimed')
      t.equal(await idem.linkJob(create.owner, 'job_0123456789012345678901', RETAIN), true, 'the job is linked as soon as it is recorded')
      t.equal(await idem.claim(claimOf('orig-2'), LEASE), 'completed', 'from then on a retry is a replay, not in progress')
      t.same(await other.idempotency.original('acct_1', 'orig-2'), { requestId: create.owner, jobId: 'job_0123456789012345678901' })
      t.equal(await idem.complete(create.owner, RETAIN, 'job_0123456789012345678901'), false, 'the settle then finds the key already final')
      clock.advance(LEASE + 1)
      t.equal(await idem.claim(claimOf('orig-2'), LEASE), 'completed', 'a linked key outlives the lease: it is kept for the retention')
      t.equal(await idem.linkJob('req_not_an_owner', 'job_x', RETAIN), false, 'only the owner links its key')

      const settled = claimOf('orig-3')
      t.equal(await idem.claim(settled, LEASE), 'claimed')
      t.equal(await idem.complete(settled.owner, RETAIN, 'job_9999999999999999999999'), true, 'the settle may name the job too')
      t.same(await idem.original('acct_1', 'orig-3'), { requestId: settled.owner, jobId: 'job_9999999999999999999999' })
      clock.advance(RETAIN + 1)
      t.equal(await idem.original('acct_1', 'orig-3'), null, 'after the retention nobody holds the key')
    })

    t.test('a different fingerprint conflicts, running or finished', async (t) => {
      const first = claimOf('k2', 'fp-a')
      t.equal(await idem.claim(first, LEASE), 'claimed')
      t.equal(await idem.claim(claimOf('k2', 'fp-b'), LEASE), 'conflict', 'while running')
      await idem.complete(first.owner, RETAIN)
      t.equal(await idem.claim(claimOf('k2', 'fp-b'), LEASE), 'conflict', 'after the end')
    })

    t.test('keys are scoped to the account', async (t) => {
      t.equal(await idem.claim(claimOf('shared', 'fp-a', 'acct_a'), LEASE), 'claimed')
      t.equal(await idem.claim(claimOf('shared', 'fp-b', 'acct_b'), LEASE), 'claimed', 'another account uses the same key freely')
    })

    t.test('a released claim frees the key; only its owner can release or complete it', async (t) => {
      const first = claimOf('k3')
      t.equal(await idem.claim(first, LEASE), 'claimed')
      t.equal(await idem.release('req_not_the_owner'), false)
      t.equal(await idem.complete('req_not_the_owner', RETAIN), false)
      t.equal(await idem.release(first.owner), true)
      const second = claimOf('k3', 'fp-other')
      t.equal(await idem.claim(second, LEASE), 'claimed', 'a released key is claimed again, even for another request')
      t.equal(await idem.release(first.owner), false, 'the first owner no longer holds it')
      t.equal(await idem.complete(first.owner, RETAIN), false)
      t.equal(await idem.complete(second.owner, RETAIN), true)
      t.equal(await idem.release(second.owner), false, 'a finished key is not released')
    })

    t.test('a crashed instance: its claim lapses when the lease ends, not before', async (t) => {
      const crashed = claimOf('k4')
      t.equal(await other.idempotency.claim(crashed, LEASE), 'claimed')
      clock.advance(LEASE - 1)
      t.equal(await idem.claim(claimOf('k4'), LEASE), 'in_progress', '1 ms before the lease ends')
      clock.advance(1)
      const next = claimOf('k4')
      t.equal(await idem.claim(next, LEASE), 'claimed', 'taken over when the lease ended')
      t.equal(await other.idempotency.complete(crashed.owner, RETAIN), false, 'the lapsed owner cannot complete it')
    })

    t.test('renewal keeps a live claim', async (t) => {
      const live = claimOf('k5')
      t.equal(await idem.claim(live, LEASE), 'claimed')
      for (let i = 0; i < 5; i++) {
        clock.advance(LEASE / 2)
        t.equal(await idem.renew([live.owner, 'req_unknown'], LEASE), 1, `renewal ${i + 1} extends this claim only`)
      }
      t.equal(await idem.claim(claimOf('k5'), LEASE), 'in_progress', '2.5 leases later, still running')
      t.equal(await idem.renew([], LEASE), 0)
      await idem.complete(live.owner, RETAIN)
      t.equal(await idem.renew([live.owner], LEASE), 0, 'a finished claim is not renewed')
    })

    t.test('a finished key is kept for its retention, then purged and usable again', async (t) => {
      const first = claimOf('k6')
      await idem.claim(first, LEASE)
      await idem.complete(first.owner, RETAIN)
      clock.advance(RETAIN - 1)
      await idem.purge() // removes the claims of the tests above whose lease lapsed meanwhile
      t.equal(await idem.claim(claimOf('k6', 'fp-new'), LEASE), 'conflict', 'kept by the purge 1 ms before its retention ends')
      clock.advance(1)
      const before = await count(store)
      const purged = await idem.purge()
      t.ok(purged >= 1, `purged once its retention ended (${purged} rows)`)
      t.equal(await count(store), before - purged)
      t.equal(await idem.claim(claimOf('k6', 'fp-new'), LEASE), 'claimed', 'the key is free again')
    })

    t.test('50 concurrent claims of one key over two instances: exactly one wins', async (t) => {
      const claims = Array.from({ length: 50 }, (_, i) => (i % 2 === 0 ? idem : other.idempotency).claim(claimOf('hot'), LEASE))
      const results = await Promise.all(claims)
      t.equal(results.filter((r) => r === 'claimed').length, 1, 'one claimed')
      t.equal(results.filter((r) => r === 'in_progress').length, 49, '49 in progress')
    })
  })
}
