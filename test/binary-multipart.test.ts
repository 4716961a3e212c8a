// Binary answers and multipart uploads pass through byte for byte (spec: Audio, Video): the
// client reads exactly the provider's audio and video bytes, and the provider receives exactly
// the uploaded bytes, with only the value of the `model` field rewritten to the upstream name.
import { randomBytes } from 'node:crypto'
import t from 'tap'
import { startTestGateway } from './helpers/gateway.js'
import { multipartBody, sha256, wavFile, withMultipartModel, type MultipartPart } from './helpers/wire.js'

const gw = await startTestGateway()
t.teardown(() => gw.close())
t.beforeEach(() => gw.mock.reset())

const CLIENT = gw.auth

function postJson (path: string, body: unknown): Promise<Response> {
  return fetch(gw.url + path, { method: 'POST', headers: { 'content-type': 'application/json', ...CLIENT }, body: JSON.stringify(body) })
}

function postForm (path: string, body: Buffer, contentType: string): Promise<Response> {
  return fetch(gw.url + path, { method: 'POST', headers: { 'content-type': contentType, ...CLIENT }, body })
}

t.test('speech: the audio bytes are the provider bytes', async (t) => {
  const input = 'The quick brown fox jumps over the lazy dog. '.repeat(40)
  for (const format of ['mp3', 'wav', 'pcm', 'flac']) {
    t.test(format, async (t) => {
      gw.mock.reset()
      const res = await postJson('/v1/audio/speech', { model: 'openai/gpt-4o-mini-tts', input, voice: 'alloy', response_format: format })
      t.equal(res.status, 200)
      const bytes = Buffer.from(await res.arrayBuffer())
      const sent = gw.mock.calls[0]?.response ?? Buffer.alloc(0)
      t.ok(sent.length > 10_000, `the provider sent ${sent.length} bytes of audio`)
      t.equal(bytes.length, sent.length, 'same length')
      t.equal(sha256(bytes), sha256(sent), 'sha256 equal to what the provider sent')
      t.equal(res.headers.get('content-length'), String(sent.length), 'Content-Length passed through')
      t.equal(res.headers.get('x-gateway-model'), 'openai/gpt-4o-mini-tts')
    })
  }
})

t.test('video content: the file bytes are the provider bytes', async (t) => {
  const created = await postJson('/v1/videos', { model: 'openai/sora-2', prompt: 'waves', seconds: 12 })
  t.equal(created.status, 200)
  const job = await created.json() as { id: string, status: string }
  let status = job.status
  for (let i = 0; i < 5 && status !== 'completed'; i++) {
    const polled = await fetch(`${gw.url}/v1/videos/${job.id}`, { headers: CLIENT })
    status = (await polled.json() as { status: string }).status
  }
  t.equal(status, 'completed')
  gw.mock.calls.length = 0
  const res = await fetch(`${gw.url}/v1/videos/${job.id}/content`, { headers: CLIENT })
  t.equal(res.status, 200)
  t.equal(res.headers.get('content-type'), 'video/mp4')
  const bytes = Buffer.from(await res.arrayBuffer())
  const sent = gw.mock.calls[0]?.response ?? Buffer.alloc(0)
  t.ok(sent.length >= 12_000, `the provider sent ${sent.length} bytes of video`)
  t.equal(sha256(bytes), sha256(sent), 'sha256 equal to what the provider sent')
})

t.test('transcription upload of 1 MiB: a PCM WAV of random samples', async (t) => {
  // Random samples under a WAV header: bytes a transcription's hold can bound (the gateway refuses
  // audio it cannot bound where audio is priced per second), none of them special to the forwarder.
  const file = wavFile(1024 * 1024 - 44)
  randomBytes(file.length - 44).copy(file, 44)
  const cases: Array<{ name: string, parts: MultipartPart[], boundary?: string, quoted?: boolean }> = [
    {
      name: 'model field first',
      parts: [{ name: 'model', value: 'openai/whisper-1' }, { name: 'file', value: file, filename: 'noise.bin', contentType: 'application/octet-stream' }, { name: 'language', value: 'en' }]
    },
    {
      name: 'model field last',
      parts: [{ name: 'file', value: file, filename: 'noise.bin', contentType: 'application/octet-stream' }, { name: 'prompt', value: 'name="model" is just text here' }, { name: 'model', value: 'openai/whisper-1' }]
    },
    {
      name: 'quoted boundary parameter',
      parts: [{ name: 'file', value: file, filename: 'noise.bin', contentType: 'application/octet-stream' }, { name: 'model', value: 'openai/whisper-1' }],
      boundary: 'quoted-boundary-7e1f',
      quoted: true
    }
  ]
  for (const c of cases) {
    t.test(c.name, async (t) => {
      gw.mock.reset()
      const form = multipartBody(c.parts, c.boundary)
      const contentType = c.quoted === true ? `multipart/form-data; boundary="${c.boundary ?? ''}"` : form.contentType
      const res = await postForm('/v1/audio/transcriptions', form.body, contentType)
      t.equal(res.status, 200)
      const json = await res.json() as { text: string }
      t.match(json.text, /^echo: audio noise\.bin/)
      const call = gw.mock.calls[0]
      if (call === undefined) throw new Error('nothing forwarded')
      t.equal(call.headers['content-type'], contentType, 'Content-Type (and its boundary) kept')
      t.equal(call.model, 'whisper-1', 'the provider sees the upstream model')
      t.equal(call.body.length, form.body.length - 'openai/'.length, 'only the model value changed length')
      t.ok(call.body.equals(withMultipartModel(form.body, 'openai/whisper-1', 'whisper-1')), 'every other byte identical')
      t.same(call.form?.files.map((f) => ({ field: f.field, size: f.size })), [{ field: 'file', size: file.length }])
    })
  }
})

t.test('transcription of a real WAV: duration read by the provider from the untouched file', async (t) => {
  const wav = wavFile(8000 * 4)
  const form = multipartBody([{ name: 'model', value: 'openai/whisper-1' }, { name: 'file', value: wav, filename: 'four.wav', contentType: 'audio/wav' }])
  const res = await postForm('/v1/audio/transcriptions', form.body, form.contentType)
  const json = await res.json() as { usage: unknown }
  t.same(json.usage, { type: 'duration', seconds: 4 })
  t.ok(gw.mock.calls[0]?.body.equals(withMultipartModel(form.body, 'openai/whisper-1', 'whisper-1')))
})

t.test('model only in the query string, not in the form: REQUEST_MODEL_REQUIRED', async (t) => {
  const form = multipartBody([{ name: 'file', value: randomBytes(4096), filename: 'a.wav', contentType: 'audio/wav' }])
  const res = await postForm('/v1/audio/transcriptions?model=openai%2Fwhisper-1', form.body, form.contentType)
  t.equal(res.status, 400)
  t.equal(res.headers.get('x-gateway-error-code'), 'REQUEST_MODEL_REQUIRED')
  t.equal(res.headers.get('x-gateway-error-reference'), 'GW-REQUEST-2002')
  const body = await res.json() as { error: { code: string, param: string | null, request_id: string } }
  t.match(body, { error: { code: 'REQUEST_MODEL_REQUIRED', param: 'model', request_id: res.headers.get('x-request-id') } })
  t.equal(gw.mock.calls.length, 0, 'nothing was sent upstream')
})
