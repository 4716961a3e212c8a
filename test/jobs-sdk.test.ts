// The official SDKs' own create-and-poll flows, end to end through the gateway against the mock
// upstreams: OpenAI videos (videos.create is multipart, then retrieve and downloadContent) and
// Google GenAI videos (models.generateVideos, which posts :predictLongRunning, then
// operations.getVideosOperation, which polls GET /v1beta/{operation name}).
import { GoogleGenAI } from '@google/genai'
import { OpenAI } from 'openai'
import t from 'tap'
import { startTestGateway, type Backend } from './helpers/gateway.js'
import { ledgerState, priceOf } from './helpers/billing.js'

// Priced per second of video: the jobs below ask for 4 s (Sora) and 8 s (Veo), one video each.
const SORA = (priceOf('openai/sora-2').unitPrice ?? 0n) * 4n
const VEO = (priceOf('genai/veo-3').unitPrice ?? 0n) * 8n

for (const backend of ['sqlite', 'pg'] as Backend[]) {
  t.test(`official SDK job flows (${backend})`, async (t) => {
    const gw = await startTestGateway({ backend })
    t.teardown(() => gw.close())

    t.test('OpenAI: videos.create (multipart), retrieve until completed, downloadContent', async (t) => {
      const openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: gw.key, maxRetries: 0 })
      const start = await ledgerState(gw)
      gw.mock.calls.length = 0
      const created = await openai.videos.create({ model: 'openai/sora-2', prompt: 'a paper boat on a river', seconds: '4' })
      const createCall = gw.mock.calls[0]
      t.match(createCall?.headers['content-type'], /^multipart\/form-data/, 'the SDK sent multipart and the provider got it')
      t.match(created, { object: 'video', status: 'queued' })
      t.match(created.id, /^job_[0-9A-Za-z]{22}$/, 'the SDK holds the gateway id')
      t.equal((await ledgerState(gw)).openHolds, 1 + start.openHolds, 'the job holds its price')

      let video = created
      for (let i = 0; i < 5 && video.status !== 'completed'; i++) video = await openai.videos.retrieve(created.id)
      t.equal(video.status, 'completed')
      t.equal(video.id, created.id, 'every poll answers under the gateway id')
      const polls = gw.mock.calls.filter((c) => c.method === 'GET')
      t.ok(polls.length > 0 && polls.every((c) => /^\/v1\/videos\/video_mock[0-9a-z_]+$/i.test(c.path)), 'the provider is polled with its own id')

      const content = await openai.videos.downloadContent(created.id)
      const bytes = Buffer.from(await content.arrayBuffer())
      const download = gw.mock.calls.at(-1)
      t.equal(content.headers.get('content-type'), 'video/mp4')
      t.ok(bytes.length > 0 && download?.response?.equals(bytes), 'the video bytes, as the provider sent them')
      const end = await ledgerState(gw)
      t.equal(end.charged - start.charged, SORA, 'billed once, at its price')
      t.equal(end.openHolds, start.openHolds)
    })

    t.test('GenAI: models.generateVideos, then operations.getVideosOperation until done', async (t) => {
      const genai = new GoogleGenAI({ apiKey: gw.key, httpOptions: { baseUrl: `${gw.url}/genai`, retryOptions: { attempts: 1 } } })
      const start = await ledgerState(gw)
      gw.mock.calls.length = 0
      let operation = await genai.models.generateVideos({ model: 'genai/veo-3', prompt: 'a drone shot of a coast', config: { durationSeconds: 8 } })
      t.match(operation.name, /^operations\/job_[0-9A-Za-z]{22}$/, "the SDK holds the gateway's operation name")
      t.notOk(operation.done)
      t.match(gw.mock.calls[0]?.path, /^\/v1beta\/models\/veo-3\.0-generate-001:predictLongRunning$/, 'the provider got predictLongRunning for its model')
      for (let i = 0; i < 5 && operation.done !== true; i++) operation = await genai.operations.getVideosOperation({ operation })
      t.equal(operation.done, true)
      t.match(operation.name, /^operations\/job_/, 'still the gateway name')
      t.match(operation.response?.generatedVideos?.[0]?.video?.uri, /\.mp4$/, 'the SDK reads the generated video')
      const polls = gw.mock.calls.filter((c) => c.method === 'GET')
      t.ok(polls.length > 0 && polls.every((c) => /^\/v1beta\/operations\/op_mock[0-9a-z_]+$/i.test(c.path)), 'the provider is polled with its own operation name')
      const end = await ledgerState(gw)
      t.equal(end.charged - start.charged, VEO, 'billed once, at its price')
      t.equal(end.openHolds, start.openHolds)
    })

    t.test('GenAI: a failed operation is not billed', async (t) => {
      const genai = new GoogleGenAI({ apiKey: gw.key, httpOptions: { baseUrl: `${gw.url}/genai`, retryOptions: { attempts: 1 }, headers: { 'x-mock-job': 'fail' } } })
      const start = await ledgerState(gw)
      let operation = await genai.models.generateVideos({ model: 'genai/veo-3', prompt: 'never renders' })
      for (let i = 0; i < 5 && operation.done !== true; i++) operation = await genai.operations.getVideosOperation({ operation })
      t.equal(operation.done, true)
      t.ok(operation.error, 'the SDK sees the error')
      const end = await ledgerState(gw)
      t.equal(end.charged, start.charged, 'nothing billed')
      t.equal(end.openHolds, start.openHolds, 'its hold released')
    })
  })
}
