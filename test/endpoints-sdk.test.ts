// Every endpoint of the spec (and every alias), called the way clients call it: through the
// official SDK of its family, or raw HTTP where the SDK has no call for the path. For each one
// the SDK parses the answer; the provider receives the catalogue's upstream model name and
// otherwise the very bytes the client sent; the provider credential from config replaces the
// client's key; and the answer names the request and the model that answered.
import { Anthropic } from '@anthropic-ai/sdk'
import { GoogleGenAI } from '@google/genai'
import { OpenAI, toFile } from 'openai'
import t from 'tap'
import { GPT_IMAGE_TOKENS, replyChunks, type RecordedCall } from './fixtures/mock-upstream.js'
import { capturingFetch, type SentRequest } from './helpers/capture-fetch.js'
import { startTestGateway, type TestGateway } from './helpers/gateway.js'
import { sha256, wavFile, withJsonModel, withMultipartModel } from './helpers/wire.js'

/** The assertions these helpers use; both the root `t` and subtests have them. */
type Assert = Pick<typeof t, 'equal' | 'ok' | 'notOk' | 'match' | 'same'>

const gw = await startTestGateway()
t.teardown(() => gw.close())
t.beforeEach(() => gw.mock.reset())

/** The client's own keys, one per family; none of them may ever reach a provider. */
const CLIENT_KEYS = {
  openai: gw.key,
  anthropic: gw.key,
  genai: gw.key
} as const

/** Credentials the test config injects (test/helpers/gateway.ts mockEnv). */
const UPSTREAM_CREDENTIALS = {
  openai: ['authorization', 'Bearer upstream-openai-secret'],
  anthropic: ['x-api-key', 'upstream-anthropic-secret'],
  genai: ['x-goog-api-key', 'upstream-genai-secret'],
  music: ['authorization', 'Bearer upstream-music-secret']
} as const

const cap = capturingFetch()
const openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: CLIENT_KEYS.openai, maxRetries: 0, fetch: cap.fetch })
const anthropic = new Anthropic({ baseURL: gw.url, apiKey: CLIENT_KEYS.anthropic, maxRetries: 0, fetch: cap.fetch })
const genai = new GoogleGenAI({
  apiKey: CLIENT_KEYS.genai,
  httpOptions: {
    baseUrl: `${gw.url}/genai`,
    headers: { 'x-genai-api-key': CLIENT_KEYS.genai },
    retryOptions: { attempts: 1 },
    fetch: cap.fetch
  }
})

function onlyCall (gateway: TestGateway = gw): RecordedCall {
  if (gateway.mock.calls.length !== 1) throw new Error(`expected exactly one upstream call, got ${gateway.mock.calls.length}`)
  const call = gateway.mock.calls[0]
  if (call === undefined) throw new Error('no upstream call')
  return call
}

/** The job id the provider answered a create with (the gateway answers its own in its place). */
function upstreamIdOf (call: RecordedCall): string {
  const id = (JSON.parse((call.response ?? Buffer.alloc(0)).toString('utf8')) as { id?: unknown }).id
  if (typeof id !== 'string') throw new Error('the create answer had no id')
  return id
}

/** Raw HTTP through the capturing fetch, so raw calls are recorded like SDK ones. */
async function raw (url: string, init: { method?: string, headers?: Record<string, string>, body?: string | Buffer } = {}): Promise<Response> {
  return await cap.fetch(url, {
    method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
    headers: init.headers ?? {},
    ...(init.body === undefined ? {} : { body: init.body })
  })
}

const jsonHeaders = (family: 'openai' | 'genai' = 'openai'): Record<string, string> => family === 'genai'
  ? { 'content-type': 'application/json', 'x-genai-api-key': CLIENT_KEYS.genai }
  : { 'content-type': 'application/json', authorization: `Bearer ${CLIENT_KEYS.openai}` }

interface Forwarded {
  /** What the client sent (recorded by the capturing fetch). */
  sent: SentRequest
  /** What the provider received. */
  call: RecordedCall
  /** Public model id, or null for routes that name no model (job polls). */
  model: string | null
  /** The catalogue's upstream_model; null when the model is in the path or absent from the body. */
  upstreamModel: string | null
  body: 'json' | 'multipart' | 'none'
  credential: keyof typeof UPSTREAM_CREDENTIALS
  /** Upstream path and query the provider should see. */
  path: string
}

/** The forwarding contract every endpoint shares. */
function assertForwarded (t: Assert, f: Forwarded): void {
  const { sent, call } = f
  t.equal(call.path, f.path, 'provider path from the model catalogue')
  t.equal(call.method, sent.method, 'method kept')
  let expected = sent.body
  if (f.model !== null && f.upstreamModel !== null) {
    expected = f.body === 'multipart' ? withMultipartModel(sent.body, f.model, f.upstreamModel) : withJsonModel(sent.body, f.model, f.upstreamModel)
    t.equal(call.model, f.upstreamModel, `provider sees upstream model ${f.upstreamModel}`)
  }
  if (f.body === 'none') t.equal(call.body.length, 0, 'no body')
  t.ok(call.body.equals(expected), 'every other request byte identical')
  if (f.body === 'multipart') t.equal(call.headers['content-type'], sent.headers.get('content-type'), 'multipart boundary kept')

  const [name, value] = UPSTREAM_CREDENTIALS[f.credential]
  t.equal(call.headers[name], value, `provider credential injected in ${name}`)
  const clientKeys: string[] = Object.values(CLIENT_KEYS)
  for (const header of ['authorization', 'x-api-key', 'x-genai-api-key', 'x-goog-api-key']) {
    const got = call.headers[header]
    t.notOk(got !== undefined && clientKeys.some((k) => got.includes(k)), `client key never forwarded in ${header}`)
  }
  t.notOk(Object.values(call.headers).some((v) => clientKeys.some((k) => v.includes(k))), 'no client key in any forwarded header')

  const res = sent.response
  if (res === undefined) throw new Error('no response recorded')
  t.match(res.headers.get('x-request-id'), /^req_[0-9a-f]{32}$/, 'x-request-id')
  t.equal(res.headers.get('x-gateway-model'), f.model, f.model === null ? 'no x-gateway-model without a model' : 'x-gateway-model names the model')
  t.equal(res.headers.get('x-gateway-requested-model'), null, 'no fallback answered')
  // A billable answer settles after its body: pending on the answer, final in the request log.
  // A job poll names no model and bills nothing.
  t.equal(res.headers.get('x-gateway-billed'), f.model === null ? 'false' : 'pending', 'X-Gateway-Billed')
  t.match(res.headers.get('x-gateway-overhead-ms'), /^\d+\.\d{3}$/, 'X-Gateway-Overhead-Ms')
}

t.test('chat family', async (t) => {
  t.test('POST /v1/chat/completions JSON', async (t) => {
    const prompt = 'Hello through the gateway'
    const r = await openai.chat.completions.create({ model: 'openai/gpt-4o', messages: [{ role: 'user', content: prompt }], temperature: 0.25 })
    t.equal(r.object, 'chat.completion')
    t.equal(r.choices[0]?.message.content, replyChunks(prompt, 5).join(''))
    t.equal(r.model, 'gpt-4o', 'the provider answer passes through untouched')
    t.equal(r.usage?.completion_tokens, 5)
    assertForwarded(t, { sent: cap.last(), call: onlyCall(), model: 'openai/gpt-4o', upstreamModel: 'gpt-4o', body: 'json', credential: 'openai', path: '/v1/chat/completions' })
  })

  t.test('POST /v1/chat/completions stream', async (t) => {
    const prompt = 'stream these words please'
    const stream = await openai.chat.completions.create({
      model: 'openai/gpt-4o', stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: prompt }]
    }, { headers: { 'x-mock-chunks': '6' } })
    let text = ''
    let usage: OpenAI.CompletionUsage | null | undefined
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? ''
      if (chunk.usage) usage = chunk.usage
    }
    t.equal(text, replyChunks(prompt, 6).join(''))
    t.equal(usage?.completion_tokens, 6)
    const sent = cap.last()
    t.match(sent.response?.headers.get('content-type'), /^text\/event-stream/)
    assertForwarded(t, { sent, call: onlyCall(), model: 'openai/gpt-4o', upstreamModel: 'gpt-4o', body: 'json', credential: 'openai', path: '/v1/chat/completions' })
    t.equal(onlyCall().stream, true)
  })

  t.test('POST /v1/responses JSON', async (t) => {
    const r = await openai.responses.create({ model: 'openai/gpt-4o-mini', input: 'What is up', instructions: 'Be brief' })
    t.equal(r.object, 'response')
    t.equal(r.output_text, replyChunks('What is up', 5).join(''))
    assertForwarded(t, { sent: cap.last(), call: onlyCall(), model: 'openai/gpt-4o-mini', upstreamModel: 'gpt-4o-mini', body: 'json', credential: 'openai', path: '/v1/responses' })
  })

  t.test('POST /v1/responses stream', async (t) => {
    const stream = openai.responses.stream({ model: 'openai/gpt-4o', input: 'typed events here' }, { headers: { 'x-mock-chunks': '3' } })
    let deltas = ''
    for await (const event of stream) if (event.type === 'response.output_text.delta') deltas += event.delta
    const final = await stream.finalResponse()
    t.equal(deltas, replyChunks('typed events here', 3).join(''))
    t.equal(final.status, 'completed')
    assertForwarded(t, { sent: cap.last(), call: onlyCall(), model: 'openai/gpt-4o', upstreamModel: 'gpt-4o', body: 'json', credential: 'openai', path: '/v1/responses' })
  })

  t.test('POST /responses (bare alias; the SDK with baseURL at the root)', async (t) => {
    const bare = new OpenAI({ baseURL: gw.url, apiKey: CLIENT_KEYS.openai, maxRetries: 0, fetch: cap.fetch })
    const r = await bare.responses.create({ model: 'openai/gpt-4o', input: 'via the alias' })
    t.equal(new URL(cap.last().url).pathname, '/responses', 'the SDK called the bare alias')
    t.equal(r.output_text, replyChunks('via the alias', 5).join(''))
    assertForwarded(t, { sent: cap.last(), call: onlyCall(), model: 'openai/gpt-4o', upstreamModel: 'gpt-4o', body: 'json', credential: 'openai', path: '/v1/responses' })
  })
})

t.test('messages family', async (t) => {
  t.test('POST /v1/messages JSON', async (t) => {
    const r = await anthropic.messages.create({ model: 'anthropic/claude-sonnet-4', max_tokens: 64, messages: [{ role: 'user', content: 'Hi Claude' }] })
    t.equal(r.type, 'message')
    t.same(r.content, [{ type: 'text', text: replyChunks('Hi Claude', 5).join('') }])
    t.equal(r.model, 'claude-sonnet-4-20250514')
    assertForwarded(t, { sent: cap.last(), call: onlyCall(), model: 'anthropic/claude-sonnet-4', upstreamModel: 'claude-sonnet-4-20250514', body: 'json', credential: 'anthropic', path: '/v1/messages' })
  })

  t.test('POST /v1/messages stream', async (t) => {
    const stream = anthropic.messages.stream({ model: 'anthropic/claude-haiku-3.5', max_tokens: 64, messages: [{ role: 'user', content: 'stream to me' }] }, { headers: { 'x-mock-chunks': '4' } })
    const final = await stream.finalMessage()
    t.same(final.content, [{ type: 'text', text: replyChunks('stream to me', 4).join('') }])
    t.equal(final.usage.output_tokens, 4)
    t.match(cap.last().response?.headers.get('content-type'), /^text\/event-stream/)
    assertForwarded(t, { sent: cap.last(), call: onlyCall(), model: 'anthropic/claude-haiku-3.5', upstreamModel: 'claude-3-5-haiku-20241022', body: 'json', credential: 'anthropic', path: '/v1/messages' })
  })

  t.test('POST /msgs/v1/messages (alias)', async (t) => {
    const aliased = new Anthropic({ baseURL: `${gw.url}/msgs`, apiKey: CLIENT_KEYS.anthropic, maxRetries: 0, fetch: cap.fetch })
    const r = await aliased.messages.create({ model: 'anthropic/claude-sonnet-4', max_tokens: 16, messages: [{ role: 'user', content: 'alias' }] })
    t.equal(new URL(cap.last().url).pathname, '/msgs/v1/messages')
    t.same(r.content, [{ type: 'text', text: replyChunks('alias', 5).join('') }])
    assertForwarded(t, { sent: cap.last(), call: onlyCall(), model: 'anthropic/claude-sonnet-4', upstreamModel: 'claude-sonnet-4-20250514', body: 'json', credential: 'anthropic', path: '/v1/messages' })
  })
})

t.test('generative-content family', async (t) => {
  t.test(':generateContent through the SDK (model id with its slash, unencoded)', async (t) => {
    const r = await genai.models.generateContent({ model: 'genai/gemini-2.5-flash', contents: 'Hello Gemini' })
    t.equal(new URL(cap.last().url).pathname, '/genai/v1beta/models/genai/gemini-2.5-flash:generateContent')
    t.equal(r.text, replyChunks('Hello Gemini', 5).join(''))
    t.equal(r.usageMetadata?.candidatesTokenCount, 5)
    assertForwarded(t, { sent: cap.last(), call: onlyCall(), model: 'genai/gemini-2.5-flash', upstreamModel: null, body: 'json', credential: 'genai', path: '/v1beta/models/gemini-2.5-flash:generateContent' })
    t.equal(onlyCall().model, 'gemini-2.5-flash', 'provider sees the upstream model in its path')
  })

  t.test(':streamGenerateContent through the SDK', async (t) => {
    const stream = await genai.models.generateContentStream({
      model: 'genai/gemini-2.5-flash', contents: 'stream it', config: { httpOptions: { headers: { 'x-mock-chunks': '4' } } }
    })
    let text = ''
    for await (const chunk of stream) text += chunk.text ?? ''
    t.equal(text, replyChunks('stream it', 4).join(''))
    assertForwarded(t, { sent: cap.last(), call: onlyCall(), model: 'genai/gemini-2.5-flash', upstreamModel: null, body: 'json', credential: 'genai', path: '/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse' })
    t.equal(onlyCall().model, 'gemini-2.5-flash')
  })

  t.test(':generateContent raw, model %2F-encoded (and a key in the query, which is dropped)', async (t) => {
    const body = JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'encoded id' }] }], generationConfig: { temperature: 0.5 } })
    const res = await raw(`${gw.url}/genai/v1beta/models/genai%2Fgemini-2.5-flash:generateContent?key=${CLIENT_KEYS.genai}`, { headers: jsonHeaders('genai'), body })
    t.equal(res.status, 200)
    const json = await res.json() as { candidates: Array<{ content: { parts: Array<{ text: string }> } }> }
    t.equal(json.candidates[0]?.content.parts[0]?.text, replyChunks('encoded id', 5).join(''))
    assertForwarded(t, { sent: cap.last(), call: onlyCall(), model: 'genai/gemini-2.5-flash', upstreamModel: null, body: 'json', credential: 'genai', path: '/v1beta/models/gemini-2.5-flash:generateContent' })
  })

  const imagen = [
    { action: 'generateImages', upstream: 'predict', body: { instances: [{ prompt: 'a lighthouse' }], parameters: { sampleCount: 2 } }, images: 2 },
    { action: 'editImage', upstream: 'editImage', body: { instances: [{ prompt: 'make it red', referenceImages: [] }], parameters: { sampleCount: 1 } }, images: 1 },
    { action: 'upscaleImage', upstream: 'upscaleImage', body: { instances: [{ prompt: '' }], parameters: { upscaleConfig: { upscaleFactor: 'x2' } } }, images: 1 }
  ] as const
  for (const c of imagen) {
    t.test(`:${c.action} raw (no SDK call has this path)`, async (t) => {
      const res = await raw(`${gw.url}/genai/v1beta/models/genai%2Fimagen-4:${c.action}`, { headers: jsonHeaders('genai'), body: JSON.stringify(c.body) })
      t.equal(res.status, 200)
      const json = await res.json() as { predictions: Array<{ mimeType: string }> }
      t.equal(json.predictions.length, c.images)
      t.equal(json.predictions[0]?.mimeType, 'image/png')
      assertForwarded(t, { sent: cap.last(), call: onlyCall(), model: 'genai/imagen-4', upstreamModel: null, body: 'json', credential: 'genai', path: `/v1beta/models/imagen-4.0-generate-001:${c.upstream}` })
    })
  }

  t.test(':generateVideos raw (the default config ships veo-3 active)', async (t) => {
    const gv = gw
    const body = JSON.stringify({ instances: [{ prompt: 'a drone shot of a coast' }], parameters: { durationSeconds: 8 } })
    const res = await raw(`${gv.url}/genai/v1beta/models/genai%2Fveo-3:generateVideos`, { headers: jsonHeaders('genai'), body })
    t.equal(res.status, 200)
    const op = await res.json() as { name: string, done: boolean }
    t.match(op, { name: /^operations\/job_/, done: false }, 'returns at once with the queued operation, under the gateway\'s name')
    assertForwarded(t, { sent: cap.last(), call: onlyCall(gv), model: 'genai/veo-3', upstreamModel: null, body: 'json', credential: 'genai', path: '/v1beta/models/veo-3.0-generate-001:predictLongRunning' })
  })
})

t.test('images', async (t) => {
  t.test('POST /v1/images/generations n=2', async (t) => {
    const r = await openai.images.generate({ model: 'openai/gpt-image-1', prompt: 'two red squares', n: 2, quality: 'low', size: '1536x1024' })
    t.equal(r.data?.length, 2)
    t.match(r, { quality: 'low', size: '1536x1024' }, 'the answer names the quality and size it rendered')
    t.equal(r.usage?.output_tokens, 2 * (GPT_IMAGE_TOKENS.low?.['1536x1024'] ?? NaN), 'the provider\'s usage passes through: two images\' tokens')
    assertForwarded(t, { sent: cap.last(), call: onlyCall(), model: 'openai/gpt-image-1', upstreamModel: 'gpt-image-1', body: 'json', credential: 'openai', path: '/v1/images/generations' })
  })

  t.test('POST /v1/images/edits multipart (SDK upload of a file)', async (t) => {
    const png = Buffer.concat([Buffer.from('89504e470d0a1a0a', 'hex'), Buffer.alloc(2048, 7)])
    const r = await openai.images.edit({ model: 'openai/gpt-image-1-edit', prompt: 'make it blue', image: await toFile(png, 'in.png', { type: 'image/png' }) })
    t.equal(r.data?.length, 1)
    const call = onlyCall()
    t.same(call.form?.files.map((f) => ({ field: f.field, size: f.size })), [{ field: 'image', size: png.length }])
    assertForwarded(t, { sent: cap.last(), call, model: 'openai/gpt-image-1-edit', upstreamModel: 'gpt-image-1', body: 'multipart', credential: 'openai', path: '/v1/images/edits' })
  })

  t.test('POST /v1/images/edits JSON', async (t) => {
    const body = JSON.stringify({ model: 'openai/gpt-image-1-edit', prompt: 'add a hat', images: [{ image_url: 'https://example.test/cat.png' }], n: 1 })
    const res = await raw(`${gw.url}/v1/images/edits`, { headers: jsonHeaders(), body })
    t.equal(res.status, 200)
    const json = await res.json() as { data: unknown[] }
    t.equal(json.data.length, 1)
    assertForwarded(t, { sent: cap.last(), call: onlyCall(), model: 'openai/gpt-image-1-edit', upstreamModel: 'gpt-image-1', body: 'json', credential: 'openai', path: '/v1/images/edits' })
  })
})

t.test('audio', async (t) => {
  t.test('POST /v1/audio/transcriptions multipart upload of a WAV', async (t) => {
    const wav = wavFile(8000 * 3) // 3 s at 8 kHz
    const r = await openai.audio.transcriptions.create({ model: 'openai/whisper-1', file: await toFile(wav, 'speech.wav', { type: 'audio/wav' }) })
    t.equal(r.text, replyChunks('audio speech.wav', 5).join(''))
    t.same(r.usage, { type: 'duration', seconds: 3 })
    const call = onlyCall()
    t.same(call.form?.files, [{ field: 'file', filename: 'speech.wav', mimeType: 'audio/wav', size: wav.length }])
    assertForwarded(t, { sent: cap.last(), call, model: 'openai/whisper-1', upstreamModel: 'whisper-1', body: 'multipart', credential: 'openai', path: '/v1/audio/transcriptions' })
  })

  t.test('POST /v1/audio/speech returns the provider bytes', async (t) => {
    const res = await openai.audio.speech.create({ model: 'openai/tts-1', input: 'Read this sentence aloud, please.', voice: 'alloy' })
    const bytes = Buffer.from(await res.arrayBuffer())
    const call = onlyCall()
    t.equal(res.headers.get('content-type'), 'audio/mpeg')
    t.ok(call.response !== undefined && call.response.length > 0, 'the mock sent audio')
    t.equal(sha256(bytes), sha256(call.response ?? Buffer.alloc(0)), 'binary body identical to what the provider sent')
    assertForwarded(t, { sent: cap.last(), call, model: 'openai/tts-1', upstreamModel: 'tts-1', body: 'json', credential: 'openai', path: '/v1/audio/speech' })
  })
})

t.test('video jobs: create, poll to completed, fetch the content', async (t) => {
  const created = await openai.videos.create({ model: 'openai/sora-2', prompt: 'a paper boat on a river', seconds: '4' })
  t.equal(created.status, 'queued')
  t.equal(created.model, 'sora-2')
  assertForwarded(t, { sent: cap.last(), call: onlyCall(), model: 'openai/sora-2', upstreamModel: 'sora-2', body: 'multipart', credential: 'openai', path: '/v1/videos' })
  // The client sees the gateway's job id; the provider is asked with its own.
  const upstreamId = upstreamIdOf(onlyCall())
  t.not(created.id, upstreamId)

  let video = created
  for (let i = 0; i < 5 && video.status !== 'completed'; i++) {
    gw.mock.calls.length = 0
    video = await openai.videos.retrieve(created.id)
    assertForwarded(t, { sent: cap.last(), call: onlyCall(), model: null, upstreamModel: null, body: 'none', credential: 'openai', path: `/v1/videos/${upstreamId}` })
  }
  t.equal(video.status, 'completed')

  gw.mock.calls.length = 0
  const content = await openai.videos.downloadContent(created.id)
  const bytes = Buffer.from(await content.arrayBuffer())
  const call = onlyCall()
  t.equal(content.headers.get('content-type'), 'video/mp4')
  t.equal(sha256(bytes), sha256(call.response ?? Buffer.alloc(0)), 'video bytes identical to what the provider sent')
  assertForwarded(t, { sent: cap.last(), call, model: null, upstreamModel: null, body: 'none', credential: 'openai', path: `/v1/videos/${upstreamId}/content` })
})

t.test('music jobs: create, then poll /v1/jobs/{id} to completed', async (t) => {
  const body = JSON.stringify({ model: 'music/melody-1', prompt: 'upbeat folk', lyrics: '[verse] walking down the road [chorus] la la la' })
  const res = await raw(`${gw.url}/v1/music/generations`, { headers: jsonHeaders(), body })
  t.equal(res.status, 200)
  const job = await res.json() as { id: string, status: string }
  t.match(job, { id: /^job_[0-9A-Za-z]{22}$/, status: 'queued' })
  assertForwarded(t, { sent: cap.last(), call: onlyCall(), model: 'music/melody-1', upstreamModel: 'melody-1', body: 'json', credential: 'music', path: '/v1/music/generations' })
  const upstreamId = upstreamIdOf(onlyCall())

  let polled: { status: string, result?: { audio_url: string } } = job
  for (let i = 0; i < 5 && polled.status !== 'completed'; i++) {
    gw.mock.calls.length = 0
    const p = await raw(`${gw.url}/v1/jobs/${job.id}`, { headers: { authorization: `Bearer ${CLIENT_KEYS.openai}` } })
    t.equal(p.status, 200)
    polled = await p.json() as typeof polled
    assertForwarded(t, { sent: cap.last(), call: onlyCall(), model: null, upstreamModel: null, body: 'none', credential: 'music', path: `/v1/jobs/${upstreamId}` })
  }
  t.equal(polled.status, 'completed')
  t.match(polled.result?.audio_url, /^http:\/\/.+\.mp3$/, 'the artifact URL is read from the result')
})
