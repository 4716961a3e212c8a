// The refusals a request earns by itself (plugins/concerns/admission, the multipart item guard, the
// first-byte deadline), as one table: every code × each family's envelope where the family can
// send such a request. Each row checks the HTTP status, the error headers, the envelope, that
// the mock upstream was not called, and that the wallet is exactly as before (no hold left, no
// entry written). Then the same requests against the repository's gateway.yaml, which declares
// none of these checks, pass: the refusals come from YAML alone.
import t from 'tap'
import { setTimeout as sleep } from 'node:timers/promises'
import type { ErrorsConfig } from '../plugins/foundation/config/types.js'
import { ledgerState, settledRow } from './helpers/billing.js'
import { startTestGateway, type TestGateway } from './helpers/gateway.js'
import { modelOf, writeTestConfig, type RawConfig } from './helpers/test-config.js'
import { multipartBody, wavFile } from './helpers/wire.js'

type Family = 'chat' | 'messages' | 'genai'

const POLICY = [{ name: 'canary-rule', terms: ['Forbidden-Canary'], patterns: ['secret-[0-9]{4}'] }]
const CHAT = '/v1/chat/completions'
const MESSAGES = '/v1/messages'
const GENAI = '/genai/v1beta/models/{model}:generateContent'
const route = (c: RawConfig, path: string): RawConfig['routes'][number] => {
  const r = c.routes.find((x) => x.path === path)
  if (r === undefined) throw new Error(`no route ${path}`)
  return r
}

/** Everything the table needs, declared in YAML only. */
function declare (c: RawConfig): void {
  for (const path of [CHAT, MESSAGES, GENAI]) {
    const r = route(c, path)
    r.content_limits = { inline_image_bytes: 1024, inline_video_bytes: 1024, prompt_chars: 1000 }
    r.content_policy = POLICY
    r.first_byte_timeout_ms = 400
  }
  route(c, '/v1/images/generations').content_policy = POLICY
  const transcriptions = route(c, '/v1/audio/transcriptions')
  transcriptions.item_limits = { file: 4096 }
  transcriptions.file_formats = { file: ['audio'] }
  Object.assign(modelOf(c, 'openai/gpt-4o'), {
    service_tiers: ['auto', 'default'], parameters: { temperature: { min: 0, max: 1 }, reasoning_effort: { values: ['low'] } }, context_window: 3000
  })
  Object.assign(modelOf(c, 'anthropic/claude-sonnet-4'), {
    service_tiers: ['auto', 'standard_only'], parameters: { temperature: { min: 0, max: 1 } }, context_window: 3000
  })
  Object.assign(modelOf(c, 'genai/gemini-2.5-flash'), { parameters: { 'generationConfig.temperature': { min: 0, max: 1 } }, context_window: 3000 })
  const veo = modelOf(c, 'genai/veo-3')
  veo.video_generation = { last_frame: false, reference_images: false }
  c.models.push({ ...veo, id: 'genai/veo-image-only', video_generation: { text_to_video: false } })
  c.models.push({ ...veo, id: 'genai/veo-text-only', video_generation: { image_to_video: false } })
  modelOf(c, 'openai/sora-2').video_generation = { image_to_video: false }
  const flash = modelOf(c, 'genai/gemini-2.5-flash')
  c.models.push({ ...flash, id: 'genai/gemini-text', capabilities: [], fallbacks: [], context_window: undefined, parameters: undefined })
  const haiku = modelOf(c, 'anthropic/claude-haiku-3.5')
  c.models.push({ ...haiku, id: 'anthropic/claude-text', capabilities: [], fallbacks: [] })
}

const cfg = writeTestConfig(declare)
t.teardown(cfg.remove)
const gw = await startTestGateway({ configFile: cfg.file })
t.teardown(() => gw.close())
// The repository's gateway.yaml on the same mock: it declares none of the checks above.
const plain = await startTestGateway({ mock: gw.mock })
t.teardown(() => plain.close())

const catalogue = (gw.config.errors as ErrorsConfig).catalogue

const PNG = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.alloc(200, 7)])
// An ID3 tag then three MPEG-1 Layer III frames (128 kbit/s, 44.1 kHz: 417 bytes each): audio the
// transcription hold can bound by its frames.
const MP3_FRAME = Buffer.concat([Buffer.from([0xff, 0xfb, 0x90, 0x64]), Buffer.alloc(413)])
const MP3 = Buffer.concat([Buffer.from('ID3'), Buffer.from([3, 0, 0, 0, 0, 0, 0]), MP3_FRAME, MP3_FRAME, MP3_FRAME])
const b64 = (bytes: number): string => Buffer.alloc(bytes, 0x41).toString('base64')

const genaiPath = (model: string, action = 'generateContent'): string => `/genai/v1beta/models/${encodeURIComponent(model)}:${action}`
const chat = (extra: Record<string, unknown> = {}, content: unknown = 'hi', model = 'openai/gpt-4o'): Req =>
  ({ path: CHAT, body: { model, messages: [{ role: 'user', content }], ...extra } })
const messages = (extra: Record<string, unknown> = {}, content: unknown = 'hi', model = 'anthropic/claude-sonnet-4'): Req =>
  ({ path: MESSAGES, body: { model, max_tokens: 32, messages: [{ role: 'user', content }], ...extra } })
const genai = (parts: unknown[] = [{ text: 'hi' }], extra: Record<string, unknown> = {}, model = 'genai/gemini-2.5-flash'): Req =>
  ({ path: genaiPath(model), body: { contents: [{ role: 'user', parts }], ...extra } })
const veo = (model: string, instance: Record<string, unknown>): Req =>
  ({ path: genaiPath(model, 'predictLongRunning'), body: { instances: [{ prompt: 'a cat', ...instance }], parameters: {} } })
const image = { bytesBase64Encoded: b64(64), mimeType: 'image/png' }
const transcription = (file: Buffer, filename: string, contentType: string): Req => {
  const form = multipartBody([{ name: 'model', value: 'openai/whisper-1' }, { name: 'file', value: file, filename, contentType }])
  return { path: '/v1/audio/transcriptions', raw: form.body, contentType: form.contentType }
}

const MP4 = Buffer.concat([Buffer.from('\x00\x00\x00\x18ftypisom', 'latin1'), Buffer.alloc(300, 2)])
const edit = (file: Buffer, filename: string, contentType: string): Req => {
  const form = multipartBody([{ name: 'model', value: 'openai/gpt-image-1-edit' }, { name: 'prompt', value: 'make it blue' }, { name: 'image', value: file, filename, contentType }])
  return { path: '/v1/images/edits', raw: form.body, contentType: form.contentType }
}

interface Req { path: string, body?: unknown, raw?: Buffer, contentType?: string, headers?: Record<string, string> }
interface Row { code: string, family: Family, what: string, req: Req, param?: string | null }

const long = 'x'.repeat(1001)
const TABLE: Row[] = [
  // 1. Item caps (413)
  { code: 'REQUEST_CONTENT_TOO_LARGE', family: 'chat', what: 'inline image_url data URL over the cap', req: chat({}, [{ type: 'image_url', image_url: { url: `data:image/png;base64,${b64(2048)}` } }]) },
  { code: 'REQUEST_CONTENT_TOO_LARGE', family: 'messages', what: 'base64 image source over the cap', req: messages({}, [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: b64(2048) } }]) },
  { code: 'REQUEST_CONTENT_TOO_LARGE', family: 'genai', what: 'inline_data image over the cap', req: genai([{ inline_data: { mime_type: 'image/png', data: b64(2048) } }]) },
  { code: 'REQUEST_CONTENT_TOO_LARGE', family: 'genai', what: 'inlineData video over the cap', req: genai([{ inlineData: { mimeType: 'video/mp4', data: b64(2048) } }]) },
  { code: 'REQUEST_CONTENT_TOO_LARGE', family: 'chat', what: 'prompt over prompt_chars', req: chat({}, long), param: 'prompt' },
  { code: 'REQUEST_CONTENT_TOO_LARGE', family: 'messages', what: 'prompt over prompt_chars', req: messages({}, long), param: 'prompt' },
  { code: 'REQUEST_CONTENT_TOO_LARGE', family: 'genai', what: 'prompt over prompt_chars', req: genai([{ text: long }]), param: 'prompt' },
  { code: 'REQUEST_CONTENT_TOO_LARGE', family: 'chat', what: 'uploaded audio file over item_limits', req: transcription(wavFile(8000), 'a.wav', 'audio/wav'), param: 'file' },
  // 2. Media types by magic bytes (415)
  { code: 'REQUEST_MEDIA_TYPE_UNSUPPORTED', family: 'chat', what: 'a PNG sent as audio', req: transcription(PNG, 'speech.wav', 'audio/wav'), param: 'file' },
  // 3. Content policy (400)
  { code: 'REQUEST_CONTENT_BLOCKED', family: 'chat', what: 'a blocked term in a chat message (any case)', req: chat({}, 'please say forbidden-canary now') },
  { code: 'REQUEST_CONTENT_BLOCKED', family: 'chat', what: 'a blocked pattern in a content part', req: chat({}, [{ type: 'text', text: 'the code is secret-1234' }]) },
  { code: 'REQUEST_CONTENT_BLOCKED', family: 'chat', what: 'a blocked term in an image prompt', req: { path: '/v1/images/generations', body: { model: 'openai/gpt-image-1', prompt: 'a forbidden-canary' } } },
  { code: 'REQUEST_CONTENT_BLOCKED', family: 'messages', what: 'a blocked term in a system prompt', req: messages({ system: 'FORBIDDEN-CANARY' }) },
  { code: 'REQUEST_CONTENT_BLOCKED', family: 'messages', what: 'a blocked pattern in a content block', req: messages({}, [{ type: 'text', text: 'secret-9876' }]) },
  { code: 'REQUEST_CONTENT_BLOCKED', family: 'genai', what: 'a blocked term in a genai part', req: genai([{ text: 'hello' }, { text: 'forbidden-canary' }]) },
  // 4. Capabilities, each where the catalogue declares it (400)
  { code: 'MODEL_VISION_UNSUPPORTED', family: 'chat', what: 'an image to a text-only model', req: chat({}, [{ type: 'image_url', image_url: { url: 'https://example.invalid/a.png' } }], 'genai/gemini-text'), param: 'model' },
  { code: 'MODEL_VISION_UNSUPPORTED', family: 'messages', what: 'an image to a text-only model', req: messages({}, [{ type: 'image', source: { type: 'url', url: 'https://example.invalid/a.png' } }], 'anthropic/claude-text'), param: 'model' },
  { code: 'MODEL_VISION_UNSUPPORTED', family: 'genai', what: 'an image to a text-only model', req: genai([{ inline_data: { mime_type: 'image/png', data: b64(16) } }], {}, 'genai/gemini-text'), param: 'model' },
  { code: 'MODEL_AUDIO_INPUT_UNSUPPORTED', family: 'chat', what: 'audio to a model without audio input', req: chat({}, [{ type: 'input_audio', input_audio: { data: b64(16), format: 'wav' } }], 'genai/gemini-text'), param: 'model' },
  { code: 'MODEL_AUDIO_INPUT_UNSUPPORTED', family: 'genai', what: 'audio to a model without audio input', req: genai([{ inline_data: { mime_type: 'audio/wav', data: b64(16) } }], {}, 'genai/gemini-text'), param: 'model' },
  { code: 'MODEL_VIDEO_INPUT_UNSUPPORTED', family: 'genai', what: 'video to a model without video input', req: genai([{ inline_data: { mime_type: 'video/mp4', data: b64(16) } }], {}, 'genai/gemini-text'), param: 'model' },
  { code: 'MODEL_VIDEO_INPUT_UNSUPPORTED', family: 'chat', what: 'an uploaded video file to a model without video input (multipart)', req: edit(MP4, 'clip.mp4', 'video/mp4'), param: 'image' },
  { code: 'MODEL_AUDIO_INPUT_UNSUPPORTED', family: 'chat', what: 'an uploaded audio file to a model without audio input (multipart)', req: edit(MP3, 'a.mp3', 'audio/mpeg'), param: 'image' },
  { code: 'MODEL_IMAGE_TO_VIDEO_UNSUPPORTED', family: 'genai', what: 'a start image to a text-to-video model', req: veo('genai/veo-text-only', { image }), param: 'image' },
  { code: 'MODEL_IMAGE_TO_VIDEO_UNSUPPORTED', family: 'chat', what: 'input_reference to a text-to-video model', req: { path: '/v1/videos', body: { model: 'openai/sora-2', prompt: 'a cat', input_reference: `data:image/png;base64,${b64(64)}` } }, param: 'image' },
  { code: 'MODEL_TEXT_TO_VIDEO_UNSUPPORTED', family: 'genai', what: 'no image to an image-to-video model', req: veo('genai/veo-image-only', {}), param: 'image' },
  { code: 'MODEL_LAST_FRAME_UNSUPPORTED', family: 'genai', what: 'a last frame to a model without last frames', req: veo('genai/veo-3', { image, lastFrame: image }), param: 'lastFrame' },
  { code: 'MODEL_FIRST_FRAME_REQUIRED', family: 'genai', what: 'a last frame without a first frame', req: veo('genai/veo-3', { lastFrame: image }), param: 'lastFrame' },
  { code: 'MODEL_REFERENCE_IMAGE_UNSUPPORTED', family: 'genai', what: 'reference images to a model without them', req: veo('genai/veo-3', { referenceImages: [{ image, referenceType: 'asset' }] }), param: 'referenceImages' },
  { code: 'MODEL_SERVICE_TIER_UNAVAILABLE', family: 'chat', what: 'a tier the model does not declare', req: chat({ service_tier: 'flex' }), param: 'service_tier' },
  { code: 'MODEL_SERVICE_TIER_UNAVAILABLE', family: 'messages', what: 'a tier the model does not declare', req: messages({ service_tier: 'priority' }) },
  { code: 'MODEL_PARAMETER_UNSUPPORTED', family: 'chat', what: 'temperature above its range', req: chat({ temperature: 1.5 }), param: 'temperature' },
  { code: 'MODEL_PARAMETER_UNSUPPORTED', family: 'chat', what: 'a value outside the declared values', req: chat({ reasoning_effort: 'high' }), param: 'reasoning_effort' },
  { code: 'MODEL_PARAMETER_UNSUPPORTED', family: 'messages', what: 'temperature below its range', req: messages({ temperature: -0.5 }) },
  { code: 'MODEL_PARAMETER_UNSUPPORTED', family: 'genai', what: 'generationConfig.temperature above its range', req: genai(undefined, { generationConfig: { temperature: 2 } }) },
  { code: 'MODEL_CONTEXT_EXCEEDED', family: 'chat', what: 'input plus max_tokens over the window', req: chat({ max_tokens: 2999 }, 'x'.repeat(40)), param: 'messages' },
  { code: 'MODEL_CONTEXT_EXCEEDED', family: 'messages', what: 'input plus max_tokens over the window', req: messages({ max_tokens: 2999 }, 'x'.repeat(40)) },
  { code: 'MODEL_CONTEXT_EXCEEDED', family: 'genai', what: 'input plus maxOutputTokens over the window', req: genai([{ text: 'x'.repeat(40) }], { generationConfig: { maxOutputTokens: 2999 } }) }
]

async function send (on: TestGateway, req: Req): Promise<Response> {
  const raw = req.raw ?? Buffer.from(JSON.stringify(req.body))
  return await fetch(on.url + req.path, {
    method: 'POST',
    headers: { 'content-type': req.contentType ?? 'application/json', ...on.auth, ...(req.headers ?? {}) },
    body: raw
  })
}

function entryOf (code: string): ErrorsConfig['catalogue'][number] {
  const e = catalogue.find((x) => x.code === code)
  if (e === undefined) throw new Error(`${code} not in the catalogue`)
  return e
}

type Assert = Pick<typeof t, 'equal' | 'ok' | 'same' | 'match'>

/** Status, headers and the family's envelope of one refusal; returns the request id. */
async function expectRefusal (t: Assert, res: Response, family: Family, code: string, param: string | null | undefined): Promise<string> {
  const entry = entryOf(code)
  const text = await res.text()
  t.equal(res.status, entry.status, `HTTP ${entry.status}`)
  t.equal(res.headers.get('x-gateway-error-code'), code, 'X-Gateway-Error-Code')
  t.equal(res.headers.get('x-gateway-error-reference'), entry.reference, 'X-Gateway-Error-Reference')
  t.equal(res.headers.get('x-gateway-billed'), 'false', 'X-Gateway-Billed: false')
  t.match(res.headers.get('content-type'), /^application\/json/, 'JSON body')
  const requestId = res.headers.get('x-request-id') ?? ''
  t.match(requestId, /^req_[0-9a-f]{32}$/, 'X-Request-ID')
  const body = JSON.parse(text) as { type?: string, error: Record<string, unknown> }
  t.ok(typeof body.error.message === 'string' && body.error.message.startsWith(entry.message), 'the catalogue message')
  if (family === 'chat') {
    t.equal(body.error.code, code, 'chat envelope: error.code')
    t.same(body.error.billing, { status: 'NOT_BILLED' }, 'chat envelope: billing')
    if (param !== undefined) t.equal(body.error.param, param, 'chat envelope: param')
  } else if (family === 'messages') {
    t.equal(body.type, 'error', 'messages envelope: type error')
    t.equal(body.error.code, code, 'messages envelope: error.code')
    t.same(body.error.billing, { status: 'NOT_BILLED' }, 'messages envelope: billing')
  } else {
    t.equal(body.error.code, entry.status, 'genai envelope: error.code is the HTTP status')
    t.equal(body.error.status, code, 'genai envelope: error.status is the code')
  }
  return requestId
}

t.test('the refusal table: every code, each family, not forwarded, not billed', async (t) => {
  for (const row of TABLE) {
    await t.test(`${row.code} (${row.family}): ${row.what}`, async (t) => {
      gw.mock.reset()
      const before = await ledgerState(gw)
      const res = await send(gw, row.req)
      const requestId = await expectRefusal(t, res, row.family, row.code, row.param)
      const logged = await settledRow(gw, requestId)
      t.equal(logged.errorCode, row.code, 'request log: the code')
      t.equal(logged.outcome, 'refused', 'request log: refused')
      t.equal(gw.mock.calls.length, 0, 'the upstream was not called')
      const after = await ledgerState(gw)
      t.equal(after.balance, before.balance, 'balance unchanged')
      t.equal(after.held, before.held, 'nothing more held')
      t.equal(after.openHolds, before.openHolds, 'no hold left open')
      t.equal(after.entries.length, before.entries.length, 'no ledger entry written')
    })
  }
})

t.test('every code of the table is answered by the plain repository config when YAML declares nothing', async (t) => {
  // Rows whose refusal comes from a declaration this slice added (not the existing capability
  // checks). The service tiers are not among them: the repository config ships each model's tiers
  // (the providers' facts), so a tier the provider does not serve is refused out of the box (next test).
  // Nor is a PNG sent as audio: where audio is priced per second the wallet refuses what it cannot
  // bound, declared or not (the test after next).
  const declared = TABLE.filter((r) => !['MODEL_VISION_UNSUPPORTED', 'MODEL_AUDIO_INPUT_UNSUPPORTED', 'MODEL_VIDEO_INPUT_UNSUPPORTED', 'MODEL_SERVICE_TIER_UNAVAILABLE'].includes(r.code) &&
    !r.req.path.includes('veo-image-only') && !r.req.path.includes('veo-text-only') && r.what !== 'a PNG sent as audio')
  for (const row of declared) {
    await t.test(`${row.code} (${row.family}): ${row.what} passes without the declaration`, async (t) => {
      // Not reset between rows: a reset mock would hand out a job id this store already recorded.
      const calls = plain.mock.calls.length
      const res = await send(plain, row.req)
      const text = await res.text()
      t.equal(res.headers.get('x-gateway-error-code'), null, `no gateway refusal (HTTP ${res.status} ${res.status >= 400 ? text : ''})`)
      t.equal(plain.mock.calls.length, calls + 1, 'forwarded to the upstream once')
    })
  }
})

t.test('the plain repository config refuses a PNG sent as audio: its duration cannot be bounded', async (t) => {
  const row = TABLE.find((r) => r.what === 'a PNG sent as audio')
  if (row === undefined) throw new Error('no PNG row')
  const calls = plain.mock.calls.length
  const res = await send(plain, row.req)
  await expectRefusal(t, res, row.family, 'REQUEST_MEDIA_TYPE_UNSUPPORTED', 'file')
  t.equal(plain.mock.calls.length, calls, 'not forwarded')
})

t.test('the plain repository config refuses a service tier the provider does not serve', async (t) => {
  for (const row of TABLE.filter((r) => r.code === 'MODEL_SERVICE_TIER_UNAVAILABLE')) {
    const calls = plain.mock.calls.length
    const res = await send(plain, row.req)
    await res.text()
    t.equal(res.headers.get('x-gateway-error-code'), 'MODEL_SERVICE_TIER_UNAVAILABLE', `${row.family}: ${row.what}`)
    t.equal(plain.mock.calls.length, calls, 'not forwarded')
  }
})

t.test('changing one YAML value changes the behaviour: a cap, a pattern, a capability, a window', async (t) => {
  const loose = writeTestConfig((c) => {
    declare(c)
    const r = route(c, CHAT)
    r.content_limits = { prompt_chars: 5000 }
    r.content_policy = [{ name: 'other-rule', patterns: ['nothing-matches-this'] }]
    modelOf(c, 'genai/veo-3').video_generation = { last_frame: true, reference_images: false }
    modelOf(c, 'openai/gpt-4o').context_window = 128000
  })
  t.teardown(loose.remove)
  const other = await startTestGateway({ configFile: loose.file, mock: gw.mock })
  t.teardown(() => other.close())
  const cases: Array<{ what: string, req: Req, code: string }> = [
    { what: 'prompt_chars 1000 → 5000', req: chat({}, long), code: 'REQUEST_CONTENT_TOO_LARGE' },
    { what: 'content_policy pattern replaced', req: chat({}, 'secret-1234'), code: 'REQUEST_CONTENT_BLOCKED' },
    { what: 'video_generation.last_frame false → true', req: veo('genai/veo-3', { image, lastFrame: image }), code: 'MODEL_LAST_FRAME_UNSUPPORTED' },
    { what: 'context_window 3000 → 128000', req: chat({ max_tokens: 2999 }, 'x'.repeat(40)), code: 'MODEL_CONTEXT_EXCEEDED' }
  ]
  for (const c of cases) {
    gw.mock.reset()
    const strictRes = await send(gw, c.req)
    await strictRes.arrayBuffer()
    t.equal(strictRes.headers.get('x-gateway-error-code'), c.code, `${c.what}: refused under the first YAML`)
    t.equal(gw.mock.calls.length, 0, `${c.what}: not forwarded under the first YAML`)
    const looseRes = await send(other, c.req)
    await looseRes.arrayBuffer()
    t.equal(looseRes.headers.get('x-gateway-error-code'), null, `${c.what}: served under the changed YAML (HTTP ${looseRes.status})`)
    t.equal(gw.mock.calls.length, 1, `${c.what}: forwarded under the changed YAML`)
  }
})

t.test('accepted inputs pass the declared checks', async (t) => {
  const ok: Array<{ what: string, req: Req }> = [
    { what: 'an MP3 named .wav', req: transcription(MP3, 'speech.wav', 'audio/wav') },
    { what: 'a PNG to an image-editing model (no vision needed)', req: edit(PNG, 'a.png', 'image/png') },
    { what: 'a WAV under the cap', req: transcription(wavFile(1000), 'a.wav', 'audio/wav') },
    { what: 'an inline image under the cap', req: chat({}, [{ type: 'image_url', image_url: { url: `data:image/png;base64,${b64(512)}` } }]) },
    { what: 'a declared tier and an in-range temperature', req: chat({ service_tier: 'default', temperature: 0.7, reasoning_effort: 'low' }) },
    { what: 'input plus max_tokens inside the window', req: messages({ max_tokens: 2000 }, 'x'.repeat(40)) },
    { what: 'a prompt alone to a text-to-video model', req: veo('genai/veo-text-only', {}) }
  ]
  for (const c of ok) {
    gw.mock.reset()
    const res = await send(gw, c.req)
    await res.arrayBuffer()
    t.equal(res.headers.get('x-gateway-error-code'), null, `${c.what}: not refused (HTTP ${res.status})`)
    t.equal(gw.mock.calls.length, 1, `${c.what}: forwarded`)
  }
})

t.test('an MP4 recording passes the declared checks, then the wallet refuses it: no true bound of its duration', async (t) => {
  gw.mock.reset()
  const res = await send(gw, transcription(MP4, 'meeting.mp4', 'video/mp4'))
  const body = await res.json() as { error: { code: string, param: string, message: string } }
  t.equal(res.status, 415, 'HTTP 415')
  t.equal(body.error.code, 'REQUEST_MEDIA_TYPE_UNSUPPORTED', 'the code')
  t.equal(body.error.param, 'file', 'param: file')
  t.match(body.error.message, /MP4/, 'the message names the format, not a declared check')
  t.equal(gw.mock.calls.length, 0, 'not forwarded')
})

t.test('an over-cap upload is refused while it streams in, before the rest is sent', async (t) => {
  gw.mock.reset()
  const before = await ledgerState(gw)
  const boundary = '----refusal-stream'
  const head = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="model"\r\n\r\nopenai/whisper-1\r\n--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.wav"\r\nContent-Type: audio/wav\r\n\r\n`)
  let sent = 0
  let cancelled = false
  const body = new ReadableStream<Uint8Array>({
    async pull (controller) {
      // 64 KiB every 20 ms, never ending: the gateway must answer without the end of the body.
      if (cancelled || sent > 16 * 1024 * 1024) return
      await sleep(20)
      const chunk = sent === 0 ? Buffer.concat([head, wavFile(65536)]) : Buffer.alloc(65536, 0x55)
      sent += chunk.length
      controller.enqueue(chunk)
    },
    cancel () { cancelled = true }
  })
  const res = await fetch(`${gw.url}/v1/audio/transcriptions`, {
    method: 'POST',
    headers: { 'content-type': `multipart/form-data; boundary=${boundary}`, ...gw.auth },
    body,
    duplex: 'half'
  } as RequestInit)
  const requestId = await expectRefusal(t, res, 'chat', 'REQUEST_CONTENT_TOO_LARGE', 'file')
  t.ok(sent < 4 * 1024 * 1024, `answered after ${sent} bytes of an endless upload`)
  t.equal(res.headers.get('connection'), 'close', 'the connection is closed (the rest is not read)')
  cancelled = true
  const logged = await settledRow(gw, requestId)
  t.equal(logged.errorCode, 'REQUEST_CONTENT_TOO_LARGE', 'request log: the code')
  t.equal(gw.mock.calls.length, 0, 'the upstream was not called')
  const after = await ledgerState(gw)
  t.equal(after.balance, before.balance, 'balance unchanged')
  t.equal(after.openHolds, before.openHolds, 'no hold left open')
})

t.test('REQUEST_TIMEOUT: no first byte within first_byte_timeout_ms, each family', async (t) => {
  const rows: Array<{ family: Family, req: Req }> = [
    { family: 'chat', req: chat() },
    { family: 'messages', req: messages() },
    { family: 'genai', req: genai() }
  ]
  for (const row of rows) {
    gw.mock.reset()
    const before = await ledgerState(gw)
    const started = Date.now()
    const res = await send(gw, { ...row.req, headers: { 'x-mock-delay-ms': '5000' } })
    const requestId = await expectRefusal(t, res, row.family, 'REQUEST_TIMEOUT', undefined)
    const waited = Date.now() - started
    t.ok(waited >= 350 && waited < 4000, `${row.family}: answered after the deadline, not the upstream's delay (${waited} ms)`)
    const logged = await settledRow(gw, requestId)
    t.equal(logged.errorCode, 'REQUEST_TIMEOUT', `${row.family}: request log: the code`)
    t.ok(logged.cost === null || logged.cost === 0n, `${row.family}: nothing posted`)
    t.equal(logged.outcome, 'refused', `${row.family}: request log: refused, not billed`)
    t.equal(gw.mock.calls.length, 1, `${row.family}: the upstream was called once`)
    await gw.mock.waitForIdle(3000)
    t.equal(gw.mock.activeRequests(), 0, `${row.family}: the upstream call was cancelled, not left running`)
    const after = await ledgerState(gw)
    t.equal(after.balance, before.balance, `${row.family}: balance unchanged`)
    t.equal(after.held, before.held, `${row.family}: nothing more held`)
    t.equal(after.openHolds, before.openHolds, `${row.family}: the hold was released`)
  }
  // The same request under the repository's config (no first_byte_timeout_ms) waits for the answer.
  plain.mock.reset()
  const res = await send(plain, { ...chat(), headers: { 'x-mock-delay-ms': '700' } })
  await res.arrayBuffer()
  t.equal(res.status, 200, 'without the YAML value the slow answer is served')
})

t.test('on PostgreSQL too: one refusal per family and the first-byte timeout leave the wallet as it was', async (t) => {
  const pg = await startTestGateway({ configFile: cfg.file, backend: 'pg' })
  t.teardown(() => pg.close())
  const rows: Array<{ family: Family, code: string, req: Req }> = [
    { family: 'chat', code: 'REQUEST_CONTENT_BLOCKED', req: chat({}, 'forbidden-canary') },
    { family: 'messages', code: 'MODEL_CONTEXT_EXCEEDED', req: messages({ max_tokens: 2999 }, 'x'.repeat(40)) },
    { family: 'genai', code: 'REQUEST_CONTENT_TOO_LARGE', req: genai([{ inline_data: { mime_type: 'image/png', data: b64(2048) } }]) },
    { family: 'genai', code: 'REQUEST_TIMEOUT', req: { ...genai(), headers: { 'x-mock-delay-ms': '3000' } } }
  ]
  for (const row of rows) {
    pg.mock.reset()
    const before = await ledgerState(pg)
    const requestId = await expectRefusal(t, await send(pg, row.req), row.family, row.code, undefined)
    const logged = await settledRow(pg, requestId)
    t.equal(logged.errorCode, row.code, `${row.code}: request log row on PostgreSQL`)
    t.equal(pg.mock.calls.length, row.code === 'REQUEST_TIMEOUT' ? 1 : 0, `${row.code}: upstream calls`)
    const after = await ledgerState(pg)
    t.equal(after.balance, before.balance, `${row.code}: balance unchanged`)
    t.equal(after.held, before.held, `${row.code}: nothing more held`)
    t.equal(after.openHolds, before.openHolds, `${row.code}: no hold left open`)
  }
})
