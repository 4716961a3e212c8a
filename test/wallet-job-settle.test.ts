// A job's end settles its hold through the wallet, like a request's: the price is posted down
// to the account's bound and no lower, the account's other open holds stay backed, an
// unrecovered part is reported once (naming the job and its request) and refuses the account's
// next holds until a top-up; a second end of the same job posts nothing. On both stores.
import t from 'tap'
import { endJob } from '../plugins/concerns/jobs/settle-job.js'
import type { Store } from '../plugins/foundation/store/index.js'
import { createWallet, type UnrecoveredOverage } from '../plugins/concerns/wallet/index.js'
import { allEntries } from './helpers/ledger.js'
import { ManualClock, seedFundedKey, testBackends } from './helpers/store.js'

const UNIT = 1_000_000_000n

for (const backend of testBackends()) {
  t.test(`a completed job posts its price down to the bound (${backend.name})`, async (t) => {
    t.teardown(() => backend.cleanup())
    const clock = new ManualClock()
    const store: Store = await backend.open({ clock })
    const { account } = await seedFundedKey(store, { account: 'jobs', key: 'jobs key' }, 1n * UNIT)
    const keys = await store.keys.listByAccount(account.id)
    const keyId = keys[0]?.id ?? ''
    const hold = async (amount: bigint, requestId: string): Promise<string> => {
      const h = await store.ledger.hold({ accountId: account.id, amount, floor: 0n, requestId, ttlMs: 86_400_000 })
      if (!h.ok) throw new Error(`hold refused: ${h.error}`)
      return h.holdId
    }
    const job = async (id: string, price: bigint, holdId: string, requestId: string): Promise<void> => {
      const at = clock.now()
      const ok = await store.jobs.create({ id, kind: 'video', upstreamId: `up-${id}`, accountId: account.id, keyId, modelId: 'openai/sora-2', provider: 'openai', price, holdId, requestId, createdAt: at, nextCheckAt: at })
      if (!ok) throw new Error('job not recorded')
    }
    const reported: UnrecoveredOverage[] = []
    const deps = { jobs: store.jobs, wallet: createWallet({ ledger: store.ledger, onUnrecovered: (o: UnrecoveredOverage) => { reported.push(o) } }), clock }

    // A request still running holds 0.50; the job held 0.10 and is priced 5.00 (a price the
    // hold did not bound: a configuration fault).
    const running = await hold(UNIT / 2n, 'req_running')
    await job('job_over', 5n * UNIT, await hold(UNIT / 10n, 'req_job'), 'req_job')
    const record = await store.jobs.getOwned('job_over', account.id)
    if (!record) throw new Error('no job')
    t.same(await endJob(deps, record, 'completed', 'completed'), { ended: true, posted: UNIT / 2n }, 'posted 1.00 − the 0.50 still reserved')
    t.same(reported, [{ requestId: 'req_job', holdId: record.holdId, jobId: 'job_over', reported: 5n * UNIT, posted: UNIT / 2n, unrecovered: 45n * UNIT / 10n }], 'reported once, naming the job and its request')
    const charge = (await allEntries(store, account.id)).find((e) => e.holdId === record.holdId)
    t.match(charge, { amount: -UNIT / 2n, note: 'job job_over', unrecovered: 45n * UNIT / 10n }, 'the receipt')
    t.same(await endJob(deps, record, 'completed', 'completed'), { ended: false, posted: 0n }, 'a second end posts nothing')
    t.equal(reported.length, 1, 'and reports nothing')
    t.same(await store.ledger.settle({ holdId: running, amount: UNIT / 2n, requestId: 'req_running' }), {
      posted: UNIT / 2n, released: 0n, overage: 0n, unrecovered: 0n, duplicate: false
    }, 'the running request\'s reservation was left whole')
    t.equal((await store.ledger.wallet(account.id)).balance, 0n, 'the balance stops at the bound')
    t.same(await store.ledger.hold({ accountId: account.id, amount: 0n, floor: 0n, requestId: 'next', ttlMs: 1000 }), { ok: false, error: 'topup_required' }, 'the account waits for a top-up')

    // A failed job releases its hold through the wallet as well.
    await store.ledger.credit({ accountId: account.id, amount: UNIT, kind: 'topup', postingId: 'topup-1' })
    await job('job_failed', UNIT / 10n, await hold(UNIT / 10n, 'req_failed'), 'req_failed')
    const failed = await store.jobs.getOwned('job_failed', account.id)
    if (!failed) throw new Error('no job')
    t.same(await endJob(deps, failed, 'failed', 'failed'), { ended: true, posted: 0n })
    t.same(await store.ledger.openHolds(account.id), [], 'its hold released')
  })
}
