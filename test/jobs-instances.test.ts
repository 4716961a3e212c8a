// Two gateway instances on one PostgreSQL database, both running their background watcher
// while clients poll the same jobs through both: every job that succeeds is posted once.
import t from 'tap'
import { startTestGateway, type TestGateway } from './helpers/gateway.js'
import { ledgerState, priceOf, sleep } from './helpers/billing.js'
import { createVideo, jobsOf, jobsTestConfig } from './helpers/jobs.js'

const PRICE = priceOf('openai/sora-2').unitPrice ?? 0n

t.test('two instances watching and polling at once post each job once (pg)', async (t) => {
  // Both watchers run every 20 ms and check every running job each round.
  const cfg = jobsTestConfig({ watcher: { enabled: true, interval_ms: 20 } })
  t.teardown(cfg.remove)
  const a = await startTestGateway({ backend: 'pg', configFile: cfg.file })
  t.teardown(() => a.close())
  const b = await startTestGateway({ configFile: cfg.file, mock: a.mock, shareStoreWith: a })
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
})
