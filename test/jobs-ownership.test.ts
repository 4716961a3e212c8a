// A job belongs to the account that created it: another account's key gets the same not-found
// as for an id that never existed, and touches nothing of the owner. Job ids have one strict
// shape, so `..`-like ids never reach an upstream; a download bills a job nobody polled.
import t from 'tap'
import { startTestGateway, type Backend, type TestGateway } from './helpers/gateway.js'
import { ledgerState, priceOf } from './helpers/billing.js'
import { createVideo, rawGet, settledLedger } from './helpers/jobs.js'

/** A job's price: sora-2 is priced per second, and these jobs ask for 4 seconds. */
const PRICE = (priceOf('openai/sora-2').unitPrice ?? 0n) * 4n

interface ErrorBody { error: { code: string, message: string, param: string | null, request_id: string } }

/** A second account with its own funded key on the same gateway. */
async function otherAccount (gw: TestGateway): Promise<Record<string, string>> {
  const account = await gw.services.store.accounts.create({ name: 'someone else' })
  const key = await gw.services.store.keys.create({ accountId: account.id, name: 'their key' })
  if (!key.ok) throw new Error(key.error)
  await gw.services.store.ledger.credit({ accountId: account.id, amount: 10_000_000_000n, kind: 'topup', postingId: `seed:${account.id}` })
  return { authorization: `Bearer ${key.value.plaintext}` }
}

/** The error without its occurrence id: what must be identical for "exists" and "does not exist". */
function shapeOf (r: { status: number, body: string }): unknown {
  const e = (JSON.parse(r.body) as ErrorBody).error
  return { status: r.status, code: e.code, message: e.message, param: e.param }
}

for (const backend of ['sqlite', 'pg'] as Backend[]) {
  t.test(`a provider that answers a job id it already gave is refused, not a 500, and nothing stays held (${backend})`, async (t) => {
    const gw = await startTestGateway({ backend })
    t.teardown(() => gw.close())
    const first = await createVideo(gw)
    const before = await ledgerState(gw)
    t.equal(before.openHolds, 1, 'the first job holds its price')
    // The mock forgets its jobs and numbers them from the start again: the next id is the first one's.
    gw.mock.reset()
    const res = await fetch(`${gw.url}/v1/videos`, {
      method: 'POST',
      headers: { ...gw.auth, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'openai/sora-2', prompt: 'a lighthouse at dusk', seconds: '4' })
    })
    const body = await res.json() as ErrorBody
    t.equal(gw.mock.calls.length, 1, 'the create reached the provider')
    t.equal(res.status, 502, 'answered as an upstream error')
    t.equal(body.error.code, 'UPSTREAM_ERROR')
    t.equal(res.headers.get('x-gateway-error-code'), 'UPSTREAM_ERROR')
    // The refused create's hold is released in its settle, after the answer is sent.
    const after = await settledLedger(gw, body.error.request_id)
    t.equal(after.openHolds, 1, "only the first job's hold is open: the refused create's was released")
    t.equal(after.balance, before.balance, 'nothing billed')
    t.equal(after.charges.length, 0, 'no charge')
    const poll = await rawGet(gw, `/v1/videos/${first.id}`, gw.auth)
    t.equal(poll.status, 200, 'the first job is still its own')
  })
}

for (const backend of ['sqlite', 'pg'] as Backend[]) {
  t.test(`jobs are owned by their account (${backend})`, async (t) => {
    const gw = await startTestGateway({ backend })
    t.teardown(() => gw.close())
    const other = await otherAccount(gw)
    const job = await createVideo(gw, { 'x-mock-job': 'complete', 'x-mock-job-polls': '1' })
    t.match(job.id, /^job_[0-9A-Za-z]{22}$/, 'the client sees the gateway id')
    t.notMatch(job.id, /video_mock/, 'never the upstream id')
    const before = await ledgerState(gw)
    t.equal(before.openHolds, 1)
    const unknown = 'job_' + 'A'.repeat(22)

    gw.mock.calls.length = 0
    const theirs = {
      poll: await rawGet(gw, `/v1/videos/${job.id}`, other),
      content: await rawGet(gw, `/v1/videos/${job.id}/content`, other),
      music: await rawGet(gw, `/v1/jobs/${job.id}`, other)
    }
    const missing = {
      poll: await rawGet(gw, `/v1/videos/${unknown}`, other),
      content: await rawGet(gw, `/v1/videos/${unknown}/content`, other),
      music: await rawGet(gw, `/v1/jobs/${unknown}`, gw.auth)
    }
    t.match(shapeOf(theirs.poll), { status: 404, code: 'REQUEST_ROUTE_NOT_FOUND', param: 'id' }, 'another account polling: 404 not-found')
    t.same(shapeOf(theirs.poll), shapeOf(missing.poll), 'the same answer as for an id that does not exist')
    t.same(shapeOf(theirs.content), shapeOf(missing.content), 'downloading: the same answer as for an id that does not exist')
    t.same(shapeOf(theirs.music), shapeOf(missing.music), 'a video id on the music poll: not found either')
    t.equal(theirs.poll.headers['x-gateway-error-code'], 'REQUEST_ROUTE_NOT_FOUND')
    t.equal(gw.mock.calls.length, 0, 'no upstream call for any of them')

    const after = await ledgerState(gw)
    t.equal(after.openHolds, 1, "the owner's hold is untouched")
    t.equal(after.charges.length, 0, 'nothing billed')
    t.equal(after.balance, before.balance)
    const row = await gw.services.store.jobs.getOwned(job.id, gw.account.id)
    t.equal(row?.state, 'pending', "the owner's job is still pending")

    // The owner, with another key of the same account, sees it.
    const second = await gw.services.store.keys.create({ accountId: gw.account.id, name: 'second key' })
    if (!second.ok) throw new Error(second.error)
    const own = await rawGet(gw, `/v1/videos/${job.id}?limit=100&after=x`, { authorization: `Bearer ${second.value.plaintext}` })
    t.equal(own.status, 200, 'another key of the owning account polls it')
    t.equal((JSON.parse(own.body) as { id: string }).id, job.id)
    const upstreamPoll = gw.mock.calls.at(-1)
    t.match(upstreamPoll?.path, /^\/v1\/videos\/video_mock[^?]*$/, 'the upstream is asked with its own id and no client query string')
  })

  t.test(`a download without any poll bills the job once (${backend})`, async (t) => {
    const gw = await startTestGateway({ backend })
    t.teardown(() => gw.close())
    const start = await ledgerState(gw)
    const job = await createVideo(gw, { 'x-mock-job': 'complete', 'x-mock-job-polls': '1' })
    const early = await createVideo(gw, { 'x-mock-job-polls': '5' })
    const failing = await createVideo(gw, { 'x-mock-job': 'fail', 'x-mock-job-polls': '1' })

    const notYet = await rawGet(gw, `/v1/videos/${early.id}/content`, gw.auth)
    t.equal(notYet.status, 400, 'before it finished: a clear refusal')
    t.equal((JSON.parse(notYet.body) as ErrorBody).error.code, 'REQUEST_INVALID')
    t.match((JSON.parse(notYet.body) as ErrorBody).error.message, /has not finished/)

    gw.mock.calls.length = 0
    const first = await fetch(`${gw.url}/v1/videos/${job.id}/content?variant=video`, { headers: gw.auth })
    const bytes = Buffer.from(await first.arrayBuffer())
    t.equal(first.status, 200)
    t.equal(first.headers.get('content-type'), 'video/mp4')
    const download = gw.mock.calls.find((c) => c.path.endsWith('/content'))
    t.ok(download?.response?.equals(bytes), 'the bytes are the upstream video, as sent')
    t.ok(gw.mock.calls.every((c) => !c.path.includes('?')), 'no client query string reaches the upstream')
    const once = await ledgerState(gw)
    t.equal(once.charges.length, 1, 'the download billed the job')
    t.equal(once.charged, PRICE)

    await fetch(`${gw.url}/v1/videos/${job.id}/content`, { headers: gw.auth }).then(async (r) => await r.arrayBuffer())
    await fetch(`${gw.url}/v1/videos/${job.id}`, { headers: gw.auth }).then(async (r) => await r.json())
    const twice = await ledgerState(gw)
    t.equal(twice.charges.length, 1, 'a second download and a poll bill nothing more')

    const failed = await rawGet(gw, `/v1/videos/${failing.id}/content`, gw.auth)
    t.equal(failed.status, 400, 'a failed job has no content')
    t.match((JSON.parse(failed.body) as ErrorBody).error.message, /failed/)
    const end = await ledgerState(gw)
    t.equal(end.charges.length, 1, 'the failed job is not billed')
    t.equal(end.openHolds, 1, 'its hold released; only the unfinished job holds')
    t.equal(end.balance, start.balance - PRICE)
  })

  t.test(`job ids of any other shape never reach the upstream (${backend})`, async (t) => {
    const gw = await startTestGateway({ backend })
    t.teardown(() => gw.close())
    const genai = { 'x-genai-api-key': gw.key }
    const paths: Array<[string, Record<string, string>]> = [
      ['/v1/videos/..', gw.auth],
      ['/v1/videos/.', gw.auth],
      ['/v1/videos/%2e%2e', gw.auth],
      ['/v1/videos/%2E%2E/content', gw.auth],
      ['/v1/videos/..%2f..', gw.auth],
      ['/v1/videos/../content', gw.auth],
      ['/v1/videos/%2e%2e?limit=100', gw.auth],
      ['/v1/jobs/..?limit=100', gw.auth],
      ['/v1/jobs/.', gw.auth],
      ['/v1/jobs/%2e', gw.auth],
      ['/v1/jobs/job_..', gw.auth],
      ['/v1/videos/job_AAAAAAAAAAAAAAAAAAAAA%2f', gw.auth],
      ['/genai/v1beta/operations/..', genai],
      ['/genai/v1beta/operations/%2e%2e', genai]
    ]
    gw.mock.calls.length = 0
    for (const [path, auth] of paths) {
      const r = await rawGet(gw, path, auth)
      t.equal(r.status, 404, `${path}: 404`)
    }
    const empty = await rawGet(gw, '/v1/videos/', gw.auth)
    t.equal(empty.status, 404, 'an empty id: 404')
    t.same(gw.mock.calls.map((c) => c.path), [], 'the upstream saw none of them')
  })
}
