// Two gateway instances on one PostgreSQL database, both running their background watcher
// while clients poll the same jobs through both: every job that succeeds is posted once.
import t from 'tap'
import { startTestGateway, type TestGateway } from './helpers/gateway.js'
import { ledgerState, priceOf, sleep } from './helpers/billing.js'
import { createVideo, jobsOf, jobsTestConfig } from './helpers/jobs.js'

/** A job's price: sora-2 is priced per second, and these jobs ask for 4 seconds. */
const PRICE = (priceOf('openai/sora-2').unitPrice ?? 0n) * 4n

t.test('two instances watching and polling at once post each job once (pg)', async (t) => {
  // Both watchers run every 20 ms and check every running job each round.
  const cfg = jobsTestConfig({ watcher: { enabled: true, interval_ms: 20 } })
  t.teardown(cfg.remove)
  const a = await startTestGateway({ backend: 'pg', configFile: cfg.file, jobWatcher: true })
  t.teardown(() => a.close())
  const b = await startTestGateway({ configFile: cfg.file, mock: a.mock, shareStoreWith: a, jobWatcher: true })
  t.teardown(() => b.close())
  const start = await ledgerState(a)
  const instances: TestGateway[] = [a, b]

  // A job ends at its third upstream poll, whoever makes it.
  const jobs = await Promise.all(Array.from({ length: 40 }, async (_, i) => {
    const via = instances[i % 2] as TestGateway
    return await createVideo(via, { 'x-mock-job': i < 30 ? 'complete' : 'fail', 'x-mock-job-polls': '3' })
  }))
  // Clients poll every job through both instances at once, while both watchers run, and a
  // third watcher round per instance is driven by hand in the middle of it.
  const extra = [jobsOf(a), jobsOf(b)]
  t.teardown(async () => { await Promise.all(extra.map(async (j) => { await j.close() })) })
  await Promise.all([
    ...jobs.flatMap((job) => instances.map(async (gw) => {
      for (let i = 0; i < 4; i++) await fetch(`${gw.url}/v1/videos/${job.id}`, { headers: a.auth }).then(async (r) => await r.arrayBuffer())
    })),
    ...extra.map(async (j) => await j.watcher.tick())
  ])
  let state = await ledgerState(a)
  for (let i = 0; i < 200 && state.openHolds > 0; i++) {
    await sleep(25)
    state = await ledgerState(a)
  }
  t.equal(state.openHolds, 0, 'every job ended')
  t.equal(state.charges.length, 30, 'the 30 that succeeded are charged once each')
  t.equal(new Set(state.charges.map((c) => c.holdId)).size, 30, 'one charge per job hold')
  t.equal(state.charged, 30n * PRICE)
  t.equal(state.balance, start.balance - 30n * PRICE)
  const rows = await Promise.all(jobs.map(async (j) => await a.services.store.jobs.getOwned(j.id, a.account.id)))
  t.equal(rows.filter((r) => r?.state === 'completed').length, 30)
  t.equal(rows.filter((r) => r?.state === 'failed').length, 10)

  // Then 20 jobs no client polls: only the two servers' own background watchers end them.
  const callsBefore = a.mock.calls.length
  await Promise.all(Array.from({ length: 20 }, async (_, i) => {
    return await createVideo(instances[i % 2] as TestGateway, { 'x-mock-job': i < 15 ? 'complete' : 'fail', 'x-mock-job-polls': '2' })
  }))
  let after = await ledgerState(a)
  for (let i = 0; i < 400 && after.openHolds > 0; i++) {
    await sleep(25)
    after = await ledgerState(a)
  }
  t.equal(after.openHolds, 0, 'the background watchers ended every unpolled job')
  t.equal(after.charges.length - state.charges.length, 15, 'and posted the 15 that succeeded once each')
  t.equal(after.balance, start.balance - 45n * PRICE)
  const watcherPolls = a.mock.calls.slice(callsBefore).filter((c) => c.method === 'GET')
  // Each job ends at its second upstream poll: 40 polls in all means no job was checked twice
  // at once by the two watchers (a claimed row is skipped by the other instance).
  t.equal(watcherPolls.length, 40, 'exactly two provider polls per job: no double work')
})
