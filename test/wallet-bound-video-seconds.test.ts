// A video job was priced per job whatever it asked for, while the providers bill every second of
// every video: Sora `seconds: "12"` cost the operator 1.20 (sora-2, $0.10 a second) for a job
// the tenant paid 1.00 for, and Veo `numberOfVideos: 4` (sampleCount) × 8 s cost 12.80 ($0.40 a
// second) for 3.00 — an overage a tenant chooses, and one no receipt showed. Now a job's units
// are the seconds × the videos it asks for (`bounds.job_units` of its operation), held and
// charged at the model's per-second price; a malformed count is refused before anything is sent.
// Through the official SDKs, on both stores.
import { GoogleGenAI } from '@google/genai'
import { OpenAI } from 'openai'
import t from 'tap'
import { ledgerState, nanos, priceOf, waitForRows } from './helpers/billing.js'
import { startTestGateway, type Backend, type TestGateway } from './helpers/gateway.js'
import { refusalCode } from './helpers/wallet-bound.js'

/** What the providers bill a second of video (price lists, 2025-09): sora-2 at 720p, veo-3.0 with audio. */
const PROVIDER_PER_SECOND = { sora: nanos('0.10'), veo: nanos('0.40') }

/** Seconds of video the provider rendered for the create calls the mock received (its bill's quantity). */
function renderedSeconds (gw: TestGateway, from: number): number {
  return gw.mock.calls.slice(from).reduce((sum, c) => sum + (c.method === 'POST' ? c.produced?.seconds ?? 0 : 0), 0)
}

for (const backend of ['sqlite', 'pg'] as Backend[]) {
  t.test(`sora-2 seconds "12": held and charged for 12 seconds, at least what the provider bills (${backend})`, async (t) => {
    const gw = await startTestGateway({ backend, credit: '5.00' })
    t.teardown(() => gw.close())
    const openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: gw.key, maxRetries: 0 })
    const start = await ledgerState(gw)
    let video = await openai.videos.create({ model: 'openai/sora-2', prompt: 'a paper boat on a river', seconds: '12' })
    for (let i = 0; i < 5 && video.status !== 'completed'; i++) video = await openai.videos.retrieve(video.id)
    t.equal(video.status, 'completed')
    const seconds = renderedSeconds(gw, 0)
    t.equal(seconds, 12, 'the provider rendered 12 seconds')
    const charged = (await ledgerState(gw)).charged - start.charged
    t.ok(charged >= BigInt(seconds) * PROVIDER_PER_SECOND.sora, `charged ${charged}, at least the provider's ${BigInt(seconds) * PROVIDER_PER_SECOND.sora}`)
    t.equal(charged, 12n * (priceOf('openai/sora-2').unitPrice ?? 0n), 'the receipt: 12 seconds at the model\'s price a second')
    const row = (await waitForRows([gw], 2)).find((r) => r.operation === 'videos.create')
    t.equal(row?.held, charged, 'the hold was the charge: the job asked for it')
    t.equal(row?.usage?.jobs, 12, 'the create\'s receipt counts 12 units (seconds)')
  })

  t.test(`veo-3 numberOfVideos 4 × 8 s: held and charged for 32 seconds (${backend})`, async (t) => {
    const gw = await startTestGateway({ backend, credit: '50.00' })
    t.teardown(() => gw.close())
    const genai = new GoogleGenAI({ apiKey: gw.key, httpOptions: { baseUrl: `${gw.url}/genai`, retryOptions: { attempts: 1 } } })
    const start = await ledgerState(gw)
    let operation = await genai.models.generateVideos({ model: 'genai/veo-3', prompt: 'a drone shot of a coast', config: { numberOfVideos: 4, durationSeconds: 8 } })
    for (let i = 0; i < 5 && operation.done !== true; i++) operation = await genai.operations.getVideosOperation({ operation })
    t.equal(operation.response?.generatedVideos?.length, 4, 'the provider rendered four videos')
    const seconds = renderedSeconds(gw, 0)
    t.equal(seconds, 32, '4 × 8 seconds')
    const charged = (await ledgerState(gw)).charged - start.charged
    t.ok(charged >= BigInt(seconds) * PROVIDER_PER_SECOND.veo, `charged ${charged}, at least the provider's ${BigInt(seconds) * PROVIDER_PER_SECOND.veo}`)
    t.equal(charged, 32n * (priceOf('genai/veo-3').unitPrice ?? 0n), 'the receipt: 32 seconds at the model\'s price a second')
  })

  t.test(`a wallet that pays for a short video cannot start a long one (${backend})`, async (t) => {
    const gw = await startTestGateway({ backend, credit: '1.00' })
    t.teardown(() => gw.close())
    const openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: gw.key, maxRetries: 0 })
    const err = await openai.videos.create({ model: 'openai/sora-2', prompt: 'x', seconds: '12' }).then(() => null, (e: unknown) => e)
    t.equal(refusalCode(err), 'BILLING_INSUFFICIENT_CREDITS', '12 seconds do not fit 1.00')
    t.equal(gw.mock.calls.length, 0, 'nothing reached the provider')
    const ok = await openai.videos.create({ model: 'openai/sora-2', prompt: 'x', seconds: '4' })
    t.equal(ok.status, 'queued', '4 seconds do')
  })

  t.test(`a malformed seconds or sampleCount is refused before anything is sent (${backend})`, async (t) => {
    const gw = await startTestGateway({ backend })
    t.teardown(() => gw.close())
    const post = async (path: string, body: unknown): Promise<{ status: number, json: { error?: { code?: string, status?: string, param?: string } } }> => {
      const res = await fetch(`${gw.url}${path}`, { method: 'POST', headers: { ...gw.auth, 'content-type': 'application/json' }, body: JSON.stringify(body) })
      return { status: res.status, json: await res.json() as { error?: { code?: string, status?: string, param?: string } } }
    }
    for (const seconds of ['12.5', '0', 'twelve', -4, 1e21, true]) {
      const r = await post('/v1/videos', { model: 'openai/sora-2', prompt: 'x', seconds })
      t.equal(r.status, 400, `seconds ${JSON.stringify(seconds)} is refused`)
      t.equal(r.json.error?.code, 'REQUEST_INVALID')
      t.equal(r.json.error?.param, 'seconds')
    }
    const veo = await post('/genai/v1beta/models/genai/veo-3:predictLongRunning', { instances: [{ prompt: 'x' }], parameters: { sampleCount: 2.5 } })
    t.equal(veo.status, 400, 'sampleCount 2.5 is refused')
    t.equal(veo.json.error?.status, 'REQUEST_INVALID')
    t.equal(gw.mock.calls.length, 0, 'nothing reached the provider')
  })
}
