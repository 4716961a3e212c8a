import t from 'tap'
import { parseMoney } from '../plugins/foundation/pricing/money.js'
import { priceOf } from './helpers/billing.js'
import { startTestGateway, type Backend } from './helpers/gateway.js'

// openai/sora-2 is priced per second of video; a job without `seconds` is Sora's default, 4 s.
const SORA = (priceOf('openai/sora-2').unitPrice ?? 0n) * 4n
const MELODY = parseMoney('0.10') // music/melody-1, per job

for (const backend of ['sqlite', 'pg'] as Backend[]) {
  t.test(`asynchronous jobs are billed when they complete, never when they fail (${backend})`, async (t) => {
    const gw = await startTestGateway({ backend, credit: '10.00' })
    t.teardown(() => gw.close())
    const { ledger } = gw.services.store
    const post = async (path: string, body: unknown, headers: Record<string, string> = {}): Promise<{ id: string }> => {
      const res = await fetch(gw.url + path, { method: 'POST', headers: { ...gw.auth, 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) })
      t.equal(res.status, 200, `${path} accepted`)
      t.equal(res.headers.get('x-gateway-billed'), 'pending')
      return await res.json() as { id: string }
    }
    const pollUntil = async (path: string, done: (s: string) => boolean): Promise<string> => {
      for (let i = 0; i < 20; i++) {
        const res = await fetch(gw.url + path, { headers: gw.auth })
        const job = await res.json() as { status: string }
        if (done(job.status)) return job.status
      }
      throw new Error(`${path} never ended`)
    }
    const balance = async (): Promise<bigint> => (await ledger.wallet(gw.account.id)).balance
    const settled = async (): Promise<void> => {
      for (let i = 0; i < 100 && (await ledger.openHolds(gw.account.id)).length > 0; i++) await new Promise((resolve) => setTimeout(resolve, 20))
    }
    const start = await balance()

    const video = await post('/v1/videos', { model: 'openai/sora-2', prompt: 'a lighthouse at dusk' })
    const held = await ledger.openHolds(gw.account.id)
    t.equal(held.length, 1, 'the job holds its price while it renders')
    t.equal(held[0]?.amount, SORA)
    t.equal(await balance(), start, 'nothing is billed at creation')
    t.equal(await pollUntil(`/v1/videos/${video.id}`, (s) => s === 'completed'), 'completed')
    await settled()
    t.equal(await balance(), start - SORA, 'billed once, when the poll saw it completed')
    await pollUntil(`/v1/videos/${video.id}`, (s) => s === 'completed')
    await settled()
    t.equal(await balance(), start - SORA, 'a second poll bills nothing more')

    const failing = await post('/v1/videos', { model: 'openai/sora-2', prompt: 'never renders' }, { 'x-mock-job': 'fail' })
    t.equal(await pollUntil(`/v1/videos/${failing.id}`, (s) => s === 'failed'), 'failed')
    await settled()
    t.equal(await balance(), start - SORA, 'a failed video is not billed')
    t.same(await ledger.openHolds(gw.account.id), [], 'its hold was released')

    // Regression: the first poll came before the create's settlement had recorded the job, so
    // the job's end was missed and its hold left open. A job answer now ends only once its job
    // is recorded: a poll sent the moment the answer arrives finds it.
    for (let i = 0; i < 5; i++) {
      const quick = await post('/v1/videos', { model: 'openai/sora-2', prompt: `quick ${i}` }, { 'x-mock-job-polls': '0', 'x-mock-job': 'fail' })
      const res = await fetch(`${gw.url}/v1/videos/${quick.id}`, { headers: gw.auth })
      t.equal((await res.json() as { status: string }).status, 'failed', 'the very first poll sees the end')
    }
    await settled()
    t.same(await ledger.openHolds(gw.account.id), [], 'every immediately polled job was settled')
    t.equal(await balance(), start - SORA, 'failed jobs, polled at once, are not billed')

    // Regression: the first poll came before the create's settlement had recorded the job, so
    // the job's end was missed and its hold left open. A job answer now reaches the client only
    // once its job is recorded: a poll sent the moment the answer arrives finds it.
    for (let i = 0; i < 10; i++) {
      const quick = await post('/v1/videos', { model: 'openai/sora-2', prompt: `quick ${i}` }, { 'x-mock-job-polls': '0', 'x-mock-job': 'fail' })
      const res = await fetch(`${gw.url}/v1/videos/${quick.id}`, { headers: gw.auth })
      t.equal((await res.json() as { status: string }).status, 'failed', 'the very first poll sees the end')
    }
    await settled()
    t.same(await ledger.openHolds(gw.account.id), [], 'every immediately polled job was settled')
    t.equal(await balance(), start - SORA, 'failed jobs, polled at once, are not billed')

    const song = await post('/v1/music/generations', { model: 'music/melody-1', prompt: 'sea shanty', lyrics: '[verse] heave' })
    t.equal(await pollUntil(`/v1/jobs/${song.id}`, (s) => s === 'completed'), 'completed')
    await settled()
    t.equal(await balance(), start - SORA - MELODY, 'music billed at its per-job price on completion')
    const entries = await ledger.entries(gw.account.id, { limit: 10 })
    t.equal(entries.filter((e) => e.kind === 'charge').length, 2, 'two charges: the video and the song')
  })
}
