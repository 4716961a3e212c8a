// The job billing cases, run once per store by test/jobs-billing-sqlite.test.ts and
// test/jobs-billing-pg.test.ts (one file each keeps each under the per-file time limit).
// Jobs are billed exactly once when they succeed, whether a client polls them or only the
// watcher sees them end; failed and timed-out jobs are released.
import type { Test } from 'tap'
import { ManualClock } from './store.js'
import { startTestGateway, type Backend, type TestGateway } from './gateway.js'
import { ledgerState, priceOf } from './billing.js'
import { createVideo, jobsOf, jobsTestConfig, type Created } from './jobs.js'

/** A job's price: sora-2 is priced per second, and these jobs ask for 4 seconds. */
const PRICE = (priceOf('openai/sora-2').unitPrice ?? 0n) * 4n
const SUCCEED = { 'x-mock-job': 'complete', 'x-mock-job-polls': '1' }
const FAIL = { 'x-mock-job': 'fail', 'x-mock-job-polls': '1' }
// Never ends upstream: only the max age ends it.
const TIME_OUT = { 'x-mock-job-polls': '1000000' }

/** 60 succeed, 30 fail, 10 never end; created 20 at a time. */
async function createHundred (gw: TestGateway): Promise<{ ok: Created[], failed: Created[], stuck: Created[] }> {
  const plan = [...Array<typeof SUCCEED>(60).fill(SUCCEED), ...Array<typeof FAIL>(30).fill(FAIL), ...Array<typeof TIME_OUT>(10).fill(TIME_OUT)]
  const created: Created[] = []
  for (let i = 0; i < plan.length; i += 20) created.push(...await Promise.all(plan.slice(i, i + 20).map(async (h) => await createVideo(gw, h))))
  return { ok: created.slice(0, 60), failed: created.slice(60, 90), stuck: created.slice(90) }
}

async function pollUntilEnd (gw: TestGateway, id: string): Promise<string> {
  let status = ''
  for (let i = 0; i < 3; i++) {
    const res = await fetch(`${gw.url}/v1/videos/${id}`, { headers: gw.auth })
    const body = await res.json() as { id: string, status: string }
    if (body.id !== id) throw new Error(`poll answered id ${body.id} for ${id}`)
    status = body.status
    if (status === 'completed' || status === 'failed') return status
  }
  return status
}

export function jobBillingCases (t: Test, backend: Backend): void {
  t.test(`100 jobs, no client polls: the watcher bills the 60 that succeed (${backend})`, async (t) => {
    const cfg = jobsTestConfig()
    t.teardown(cfg.remove)
    const clock = new ManualClock(new Date())
    const gw = await startTestGateway({ backend, configFile: cfg.file, services: { clock } })
    t.teardown(() => gw.close())
    const jobs = jobsOf(gw)
    t.teardown(() => jobs.close())
    const start = await ledgerState(gw)

    await createHundred(gw)
    const created = await ledgerState(gw)
    t.equal(created.openHolds, 100, 'every job holds its price')
    t.equal(created.charges.length, 0, 'nothing is billed at creation')

    const first = await jobs.watcher.tick()
    t.match(first, { claimed: 100, completed: 60, failed: 30, running: 10, expired: 0 }, 'one round ends the 90 finished jobs')
    t.match(await jobs.watcher.tick(), { claimed: 10, running: 10, completed: 0, failed: 0 }, 'later rounds see only the 10 still running')
    const running = await ledgerState(gw)
    t.equal(running.charges.length, 60, '60 charges')
    t.equal(running.openHolds, 10, 'the 10 still running keep their holds')

    clock.advance(3_600_000)
    const last = await jobs.watcher.tick()
    t.equal(last.expired, 10, 'past the max age the 10 are expired')
    const end = await ledgerState(gw)
    t.equal(end.charges.length, 60, 'exactly 60 charged')
    t.equal(end.charged, 60n * PRICE, 'each at the price locked at submit')
    t.equal(end.openHolds, 0, 'every other hold released')
    t.equal(end.balance, start.balance - 60n * PRICE)
    t.equal(end.held, 0n)
    t.same(await jobs.watcher.tick(), { claimed: 0, completed: 0, failed: 0, expired: 0, running: 0, unknown: 0 }, 'nothing is left to watch')
  })

  t.test(`100 jobs, clients poll them: the same 60 are billed (${backend})`, async (t) => {
    const cfg = jobsTestConfig()
    t.teardown(cfg.remove)
    const clock = new ManualClock(new Date())
    const gw = await startTestGateway({ backend, configFile: cfg.file, services: { clock } })
    t.teardown(() => gw.close())
    const jobs = jobsOf(gw)
    t.teardown(() => jobs.close())
    const start = await ledgerState(gw)

    const { ok, failed, stuck } = await createHundred(gw)
    const statuses = await Promise.all([...ok, ...failed, ...stuck].map(async (j) => await pollUntilEnd(gw, j.id)))
    t.equal(statuses.filter((s) => s === 'completed').length, 60)
    t.equal(statuses.filter((s) => s === 'failed').length, 30)
    t.equal(statuses.filter((s) => s === 'in_progress').length, 10)
    const polled = await ledgerState(gw)
    t.equal(polled.charges.length, 60, 'the polls billed the 60 completed jobs')
    t.equal(polled.openHolds, 10, 'only the running jobs still hold')

    // The watcher only finds the running ones: the polls already ended the rest.
    const round = await jobs.watcher.tick()
    t.match(round, { completed: 0, failed: 0, running: 10 }, 'the watcher bills nothing the polls billed')
    clock.advance(3_600_000)
    t.equal((await jobs.watcher.tick()).expired, 10)
    const end = await ledgerState(gw)
    t.equal(end.charges.length, 60, 'exactly 60 charged')
    t.equal(end.charged, 60n * PRICE)
    t.equal(end.openHolds, 0)
    t.equal(end.balance, start.balance - 60n * PRICE)
  })

  t.test(`one completed job polled 20 times at once, with the watcher running, posts once (${backend})`, async (t) => {
    const cfg = jobsTestConfig()
    t.teardown(cfg.remove)
    const gw = await startTestGateway({ backend, configFile: cfg.file })
    t.teardown(() => gw.close())
    const jobs = jobsOf(gw)
    t.teardown(() => jobs.close())
    const start = await ledgerState(gw)
    const job = await createVideo(gw, { 'x-mock-job': 'complete', 'x-mock-job-polls': '0' })
    const answers = await Promise.all([
      ...Array.from({ length: 20 }, async () => await fetch(`${gw.url}/v1/videos/${job.id}`, { headers: gw.auth }).then(async (r) => await r.json() as { id: string, status: string })),
      jobs.watcher.tick()
    ])
    t.equal(answers.slice(0, 20).filter((a) => typeof a === 'object' && 'status' in a && a.status === 'completed' && a.id === job.id).length, 20, 'every poll sees it completed, under the gateway id')
    const end = await ledgerState(gw)
    t.equal(end.charges.length, 1, 'one charge')
    t.equal(end.charged, PRICE)
    t.equal(end.balance, start.balance - PRICE)
    t.equal(end.openHolds, 0)
  })

  t.test(`a job the upstream forgets is expired and released (${backend})`, async (t) => {
    const cfg = jobsTestConfig()
    t.teardown(cfg.remove)
    const gw = await startTestGateway({ backend, configFile: cfg.file })
    t.teardown(() => gw.close())
    const jobs = jobsOf(gw)
    t.teardown(() => jobs.close())
    await createVideo(gw, TIME_OUT)
    await createVideo(gw, TIME_OUT)
    t.equal((await ledgerState(gw)).openHolds, 2)
    gw.mock.reset() // the upstream loses every job: its polls answer 404
    const round = await jobs.watcher.tick()
    t.equal(round.expired, 2, 'both expired on the upstream 404')
    const end = await ledgerState(gw)
    t.equal(end.openHolds, 0, 'their holds released')
    t.equal(end.charges.length, 0, 'nothing billed')
  })
}
