// JobStore contract, run against SQLite and PostgreSQL.
import t from 'tap'
import type { NewJob, Store } from '../plugins/foundation/store/index.js'
import { ManualClock, testBackends } from './helpers/store.js'

let seq = 0
function newJob (accountId: string, at: Date, over: Partial<NewJob> = {}): NewJob {
  seq++
  return {
    id: `job_${String(seq).padStart(22, '0')}`,
    kind: 'video',
    upstreamId: `video_up_${seq}`,
    accountId,
    keyId: 'key_1',
    modelId: 'openai/sora-2',
    provider: 'openai',
    price: 1_000_000_000n,
    holdId: `hold_${seq}`,
    requestId: `req_${seq}`,
    createdAt: at,
    nextCheckAt: at,
    ...over
  }
}

for (const backend of testBackends()) {
  t.test(`jobs store (${backend.name})`, async (t) => {
    t.teardown(() => backend.cleanup())
    const clock = new ManualClock('2030-01-01T00:00:00.000Z')
    const store: Store = await backend.open({ clock })
    const { jobs } = store

    t.test('a job reads back whole, and only for its owner', async (t) => {
      const job = newJob('acct_a', clock.now(), { price: 12_345_678_901_234n, kind: 'operation', upstreamId: 'models/veo/operations/abc' })
      await jobs.create(job)
      const read = await jobs.getOwned(job.id, 'acct_a')
      t.match(read, { ...job, state: 'pending', upstreamStatus: null, checks: 0, claimedUntil: null, finishedAt: null })
      t.equal(read?.price, 12_345_678_901_234n, 'a price above 2^53 nano-units survives')
      t.equal(read?.createdAt.getTime(), job.createdAt.getTime())
      t.equal(await jobs.getOwned(job.id, 'acct_b'), null, 'another account reads nothing')
      t.equal(await jobs.getOwned('job_missing', 'acct_a'), null, 'an unknown id reads nothing')
    })

    t.test('the same hold or upstream job cannot be recorded twice', async (t) => {
      const job = newJob('acct_a', clock.now())
      await jobs.create(job)
      await t.rejects(jobs.create({ ...newJob('acct_a', clock.now()), holdId: job.holdId }), 'same hold')
      const again = newJob('acct_a', clock.now())
      t.equal(await jobs.create({ ...again, upstreamId: job.upstreamId }), false, 'same upstream job at the same provider: not recorded')
      t.equal(await jobs.getOwned(again.id, 'acct_a'), null, 'and nothing stored for it')
      t.equal(await jobs.create({ ...newJob('acct_a', clock.now()), upstreamId: job.upstreamId, provider: 'other' }), true, 'same upstream id at another provider')
    })

    t.test('finish moves a pending job once', async (t) => {
      const job = newJob('acct_a', clock.now())
      await jobs.create(job)
      const first = await jobs.finish(job.id, 'completed', 'completed', clock.now())
      t.equal(first?.state, 'completed')
      t.equal(first?.upstreamStatus, 'completed')
      t.equal(first?.finishedAt?.getTime(), clock.now().getTime())
      t.equal(await jobs.finish(job.id, 'completed', 'completed', clock.now()), null, 'a second finish is refused')
      t.equal(await jobs.finish(job.id, 'failed', 'failed', clock.now()), null, 'and so is another end')
      t.equal((await jobs.getOwned(job.id, 'acct_a'))?.state, 'completed')
      const many = newJob('acct_a', clock.now())
      await jobs.create(many)
      const results = await Promise.all(Array.from({ length: 10 }, async () => await jobs.finish(many.id, 'completed', null, clock.now())))
      t.equal(results.filter((r) => r !== null).length, 1, 'ten concurrent finishes: one moves the job')
    })

    t.test('claims: due jobs only, each to one claimer until the lease ends', async (t) => {
      const owner = 'acct_claims'
      const now = clock.now()
      const due = [newJob(owner, now), newJob(owner, now), newJob(owner, now)]
      const later = newJob(owner, now, { nextCheckAt: new Date(now.getTime() + 60_000) })
      for (const j of [...due, later]) await jobs.create(j)
      // Jobs of earlier subtests are due as well: claim everything due, then look at ours.
      const first = await jobs.claimDue(now, 30_000, 1000)
      const mine = first.filter((j) => j.accountId === owner).map((j) => j.id).sort()
      t.same(mine, due.map((j) => j.id).sort(), 'the three due jobs, not the later one')
      t.ok(first.every((j) => j.state === 'pending'), 'only pending jobs')
      t.same(await jobs.claimDue(now, 30_000, 1000), [], 'a claimed job is not handed out again')
      clock.advance(30_000)
      const again = await jobs.claimDue(clock.now(), 30_000, 1000)
      t.same(again.filter((j) => j.accountId === owner).map((j) => j.id).sort(), due.map((j) => j.id).sort(), 'after the lease the jobs are due again')
      const [a] = due
      if (a === undefined) throw new Error('no job')
      await jobs.reschedule(a.id, new Date(clock.now().getTime() + 120_000), 'in_progress')
      const rescheduled = await jobs.getOwned(a.id, owner)
      t.equal(rescheduled?.checks, 1, 'a reschedule counts the check')
      t.equal(rescheduled?.claimedUntil, null, 'and drops the claim')
      t.equal(rescheduled?.upstreamStatus, 'in_progress')
      clock.advance(60_000)
      const third = await jobs.claimDue(clock.now(), 30_000, 1000)
      t.notOk(third.some((j) => j.id === a.id), 'a rescheduled job waits for its next check')
      t.ok(third.some((j) => j.id === later.id), 'the later job is due now')
    })

    t.test('concurrent claims never hand one job to two claimers', async (t) => {
      clock.advance(3_600_000)
      const owner = 'acct_race'
      const now = clock.now()
      const mine = Array.from({ length: 40 }, () => newJob(owner, now))
      for (const j of mine) await jobs.create(j)
      const other = await backend.open({ clock })
      const claims = await Promise.all([
        jobs.claimDue(now, 60_000, 15), other.jobs.claimDue(now, 60_000, 15),
        jobs.claimDue(now, 60_000, 15), other.jobs.claimDue(now, 60_000, 15)
      ])
      const ids = claims.flat().map((j) => j.id)
      t.equal(new Set(ids).size, ids.length, `no job claimed twice (${ids.length} claimed)`)
    })

    t.test('finished jobs are never claimed', async (t) => {
      clock.advance(3_600_000)
      const job = newJob('acct_done', clock.now())
      await jobs.create(job)
      await jobs.finish(job.id, 'failed', 'failed', clock.now())
      const claimed = await jobs.claimDue(clock.now(), 1000, 1000)
      t.notOk(claimed.some((j) => j.id === job.id))
    })
  })
}
