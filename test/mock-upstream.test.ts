// The mock upstream speaks each provider's wire format well enough for the official SDKs,
// fails on demand, and records what it received and produced.
import { Anthropic } from '@anthropic-ai/sdk'
import { GoogleGenAI } from '@google/genai'
import { OpenAI, toFile } from 'openai'
import t from 'tap'
import {
  GPT_IMAGE_TOKENS, replyChunks, replyText, startMockUpstream, tokensFor, type RecordedCall
} from './fixtures/mock-upstream.js'

const mock = await startMockUpstream()
t.teardown(() => mock.close())

t.test('a whole answer is the streamed words joined, built in one piece', async (t) => {
  for (const [text, count] of [['x', 0], ['x', 1], ['x', 2], ['x', 3], ['x', 7], ['one two three', 6], ['one two three', 8], ['  spaced   out ', 5], ['a'.repeat(40), 3]] as const) {
    t.equal(replyText(text, count), replyChunks(text, count).join(''), `${JSON.stringify(text)} × ${count}`)
  }
})
t.beforeEach(() => mock.reset())

const openai = new OpenAI({ baseURL: `${mock.url}/v1`, apiKey: 'x', maxRetries: 0 })
const anthropic = new Anthropic({ baseURL: mock.url, apiKey: 'x', maxRetries: 0 })
const genai = new GoogleGenAI({ apiKey: 'x', httpOptions: { baseUrl: mock.url, retryOptions: { attempts: 1 } } })

function lastCall (): RecordedCall {
  const call = mock.calls.at(-1)
  if (call === undefined) throw new Error('no call recorded')
  return call
}

function post (path: string, body: unknown, headers: Record<string, string> = {}, signal?: AbortSignal): Promise<Response> {
  return fetch(`${mock.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
    ...(signal === undefined ? {} : { signal })
  })
}

const chatBody = (text: string, extra: Record<string, unknown> = {}): Record<string, unknown> =>
  ({ model: 'gpt-4o', messages: [{ role: 'user', content: text }], ...extra })

/** `data:` payloads of an SSE body (without `[DONE]`). */
function sseJson (text: string): unknown[] {
  return text.split('\n').filter((l) => l.startsWith('data: ') && l !== 'data: [DONE]').map((l) => JSON.parse(l.slice(6)) as unknown)
}

/** A PCM WAV: 16 kHz, 16-bit, mono, `seconds` long. */
function makeWav (seconds: number): Buffer {
  const rate = 16000
  const data = Math.round(seconds * rate) * 2
  const b = Buffer.alloc(44 + data)
  b.write('RIFF', 0, 'ascii')
  b.writeUInt32LE(36 + data, 4)
  b.write('WAVEfmt ', 8, 'ascii')
  b.writeUInt32LE(16, 16)
  b.writeUInt16LE(1, 20)
  b.writeUInt16LE(1, 22)
  b.writeUInt32LE(rate, 24)
  b.writeUInt32LE(rate * 2, 28)
  b.writeUInt16LE(2, 32)
  b.writeUInt16LE(16, 34)
  b.write('data', 36, 'ascii')
  b.writeUInt32LE(data, 40)
  for (let i = 0; i < data / 2; i++) b.writeInt16LE(Math.round(8000 * Math.sin(i / 10)), 44 + i * 2)
  return b
}

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])

t.test('OpenAI SDK', async (t) => {
  t.test('chat completion JSON', async (t) => {
    const prompt = 'Hello mock world'
    const r = await openai.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: prompt }] })
    const call = lastCall()
    t.equal(r.choices[0]?.message.content, replyChunks(prompt, 5).join(''))
    t.equal(r.choices[0]?.finish_reason, 'stop')
    t.same(call.produced, { inputTokens: tokensFor(prompt.length), outputTokens: 5 })
    t.equal(r.usage?.prompt_tokens, call.produced?.inputTokens)
    t.equal(r.usage?.completion_tokens, call.produced?.outputTokens)
    t.equal(r.usage?.total_tokens, tokensFor(prompt.length) + 5)
    t.equal(call.operation, 'chat.completions')
    t.equal(call.model, 'gpt-4o')
    t.equal(call.completed, true)
  })

  t.test('chat completion stream with include_usage', async (t) => {
    const stream = await openai.chat.completions.create({
      model: 'gpt-4o', stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'count to seven please' }]
    }, { headers: { 'x-mock-chunks': '7' } })
    let text = ''
    let usage: OpenAI.CompletionUsage | null | undefined
    let finish: string | null | undefined
    let chunks = 0
    for await (const chunk of stream) {
      chunks++
      text += chunk.choices[0]?.delta.content ?? ''
      finish = chunk.choices[0]?.finish_reason ?? finish
      if (chunk.usage) {
        t.same(chunk.choices, [], 'usage chunk has no choices')
        usage = chunk.usage
      }
    }
    const call = lastCall()
    t.equal(chunks, 1 + 7 + 1 + 1, 'role chunk, 7 content chunks, finish chunk, usage chunk')
    t.equal(text, replyChunks('count to seven please', 7).join(''))
    t.equal(finish, 'stop')
    t.same(call.produced, { inputTokens: tokensFor(21), outputTokens: 7 })
    t.equal(usage?.prompt_tokens, call.produced?.inputTokens)
    t.equal(usage?.completion_tokens, 7)
    t.equal(call.stream, true)
    t.equal(call.completed, true)
    t.match(call.response?.toString(), /data: \[DONE\]\n\n$/)
  })

  t.test('chat completion honours max_tokens', async (t) => {
    const r = await openai.chat.completions.create({ model: 'gpt-4o', max_tokens: 2, messages: [{ role: 'user', content: 'a b c d e f' }] })
    t.equal(r.choices[0]?.finish_reason, 'length')
    t.equal(r.usage?.completion_tokens, 2)
    t.equal(r.choices[0]?.message.content, 'echo: a')
  })

  t.test('Gemini OpenAI-compatible chat completions path', async (t) => {
    const compat = new OpenAI({ baseURL: `${mock.url}/v1beta/openai`, apiKey: 'x', maxRetries: 0 })
    const r = await compat.chat.completions.create({ model: 'gemini-2.5-flash', messages: [{ role: 'user', content: 'hi' }] })
    t.equal(r.choices[0]?.message.content, replyChunks('hi', 5).join(''))
    t.equal(lastCall().path, '/v1beta/openai/chat/completions')
  })

  t.test('responses JSON', async (t) => {
    const r = await openai.responses.create({ model: 'gpt-4o', input: 'What is up', instructions: 'Be brief' })
    const call = lastCall()
    t.equal(r.output_text, replyChunks('What is up', 5).join(''))
    t.equal(r.status, 'completed')
    t.same(call.produced, { inputTokens: tokensFor('What is upBe brief'.length), outputTokens: 5 })
    t.equal(r.usage?.input_tokens, call.produced?.inputTokens)
    t.equal(r.usage?.output_tokens, 5)
    t.equal(r.usage?.total_tokens, (call.produced?.inputTokens ?? 0) + 5)
  })

  t.test('responses stream with typed events', async (t) => {
    const stream = openai.responses.stream({ model: 'gpt-4o', input: 'stream me something' }, { headers: { 'x-mock-chunks': '4' } })
    const types: string[] = []
    let deltas = ''
    for await (const event of stream) {
      types.push(event.type)
      if (event.type === 'response.output_text.delta') deltas += event.delta
    }
    const final = await stream.finalResponse()
    const call = lastCall()
    t.same(types, [
      'response.created', 'response.in_progress', 'response.output_item.added', 'response.content_part.added',
      'response.output_text.delta', 'response.output_text.delta', 'response.output_text.delta', 'response.output_text.delta',
      'response.output_text.done', 'response.content_part.done', 'response.output_item.done', 'response.completed'
    ])
    t.equal(deltas, replyChunks('stream me something', 4).join(''))
    t.equal(final.output_text, deltas)
    t.same(final.usage && { i: final.usage.input_tokens, o: final.usage.output_tokens, t: final.usage.total_tokens },
      { i: call.produced?.inputTokens, o: 4, t: (call.produced?.inputTokens ?? 0) + 4 })
    t.match(call.response?.toString(), /^event: response\.created\ndata: /)
  })

  t.test('images generations: n images, token usage', async (t) => {
    const r = await openai.images.generate({ model: 'gpt-image-1', prompt: 'a red square', n: 3 })
    const call = lastCall()
    t.equal(r.data?.length, 3)
    const first = r.data?.[0]?.b64_json
    t.ok(first !== undefined && Buffer.from(first, 'base64').subarray(0, 8).equals(PNG_SIGNATURE), 'PNG bytes')
    // No quality or size asked: the mock renders its `auto` choice, medium 1024x1024, and says so.
    const perImage = GPT_IMAGE_TOKENS.medium?.['1024x1024'] ?? 0
    t.same(call.produced, { inputTokens: tokensFor('a red square'.length), outputTokens: 3 * perImage, images: 3 })
    t.equal(r.usage?.output_tokens, 3 * perImage)
    t.match(r, { quality: 'medium', size: '1024x1024' }, 'the answer says what it rendered')
    t.equal(r.usage?.input_tokens, call.produced?.inputTokens)
  })

  t.test('images generations: gpt-image models refuse response_format as the real API does', async (t) => {
    const err = await openai.images.generate({ model: 'gpt-image-1', prompt: 'x', response_format: 'b64_json' }).then(() => null, (e: unknown) => e)
    t.ok(err instanceof OpenAI.BadRequestError, 'BadRequestError')
    if (!(err instanceof OpenAI.APIError)) return
    t.equal(err.message, "400 Unknown parameter: 'response_format'.")
    t.equal(err.param, 'response_format')
    t.equal(err.code, 'unknown_parameter')
  })

  t.test('images generations: dall-e has no usage, url format', async (t) => {
    const r = await openai.images.generate({ model: 'dall-e-3', prompt: 'x', response_format: 'url' })
    t.equal(r.usage, undefined)
    const url = r.data?.[0]?.url ?? ''
    t.match(url, new RegExp(`^${mock.url}/files/.+\\.png$`))
    const img = Buffer.from(await (await fetch(url)).arrayBuffer())
    t.ok(img.subarray(0, 8).equals(PNG_SIGNATURE))
  })

  t.test('images edits: multipart upload', async (t) => {
    const png = Buffer.concat([PNG_SIGNATURE, Buffer.alloc(100, 1)])
    const r = await openai.images.edit({ model: 'gpt-image-1', prompt: 'make it blue', image: await toFile(png, 'in.png', { type: 'image/png' }) })
    const call = lastCall()
    t.equal(r.data?.length, 1)
    t.equal(call.form?.fields.prompt, 'make it blue')
    t.equal(call.form?.fields.model, 'gpt-image-1')
    t.same(call.form?.files.map((f) => ({ field: f.field, size: f.size })), [{ field: 'image', size: png.length }])
    t.equal(call.produced?.images, 1)
  })

  t.test('audio transcription: duration usage from the WAV', async (t) => {
    const wav = makeWav(1.5)
    const r = await openai.audio.transcriptions.create({ model: 'whisper-1', file: await toFile(wav, 'speech.wav', { type: 'audio/wav' }) })
    const call = lastCall()
    t.same(r.usage, { type: 'duration', seconds: 2 })
    t.equal(r.text, replyChunks('audio speech.wav', 5).join(''))
    t.same(call.produced, { inputTokens: 0, outputTokens: 0, seconds: 2 })
    t.same(call.form?.files, [{ field: 'file', filename: 'speech.wav', mimeType: 'audio/wav', size: wav.length }])
  })

  t.test('audio transcription: token usage for token-billed models', async (t) => {
    const r = await openai.audio.transcriptions.create({ model: 'gpt-4o-mini-transcribe', file: await toFile(makeWav(3), 'a.wav', { type: 'audio/wav' }) })
    const call = lastCall()
    t.same(call.produced, { inputTokens: 30, outputTokens: 5, seconds: 3 })
    t.match(r.usage, { type: 'tokens', input_tokens: 30, output_tokens: 5, total_tokens: 35 })
  })

  t.test('audio speech: binary audio proportional to input', async (t) => {
    const input = 'Hello there, speaker.'
    const mp3 = await openai.audio.speech.create({ model: 'tts-1', voice: 'alloy', input })
    t.equal(mp3.headers.get('content-type'), 'audio/mpeg')
    const mp3Bytes = Buffer.from(await mp3.arrayBuffer())
    t.equal(mp3Bytes.length, Math.round(input.length * 0.06 * 4000))
    t.same([...mp3Bytes.subarray(0, 2)], [0xff, 0xfb], 'MPEG frame sync')
    t.same(lastCall().produced, { inputTokens: tokensFor(input.length), outputTokens: input.length, characters: input.length, seconds: 1.26 })

    const wav = await openai.audio.speech.create({ model: 'tts-1', voice: 'alloy', input: input + input, response_format: 'wav' })
    t.equal(wav.headers.get('content-type'), 'audio/wav')
    const wavBytes = Buffer.from(await wav.arrayBuffer())
    t.equal(wavBytes.toString('ascii', 0, 4), 'RIFF')
    t.equal(wavBytes.toString('ascii', 8, 12), 'WAVE')
    t.equal(wavBytes.length, 44 + Math.round(input.length * 2 * 0.06 * 8000))
    t.equal(lastCall().produced?.characters, input.length * 2)

    const again = Buffer.from(await (await openai.audio.speech.create({ model: 'tts-1', voice: 'alloy', input })).arrayBuffer())
    t.ok(again.equals(mp3Bytes), 'deterministic bytes')
  })

  t.test('videos: queued → in_progress → completed, then content', async (t) => {
    const created = await openai.videos.create({ model: 'sora-2', prompt: 'a cat surfing' })
    t.match(created, { object: 'video', status: 'queued', model: 'sora-2' })
    t.equal((await openai.videos.retrieve(created.id)).status, 'in_progress')
    const done = await openai.videos.retrieve(created.id)
    t.equal(done.status, 'completed')
    t.equal(done.progress, 100)
    const content = await openai.videos.downloadContent(created.id)
    t.equal(content.headers.get('content-type'), 'video/mp4')
    const bytes = Buffer.from(await content.arrayBuffer())
    t.equal(bytes.toString('ascii', 4, 8), 'ftyp')
    t.equal(lastCall().produced?.seconds, 4)
  })

  t.test('videos: x-mock-job: fail ends failed and has no content', async (t) => {
    const created = await openai.videos.create({ model: 'sora-2', prompt: 'x' }, { headers: { 'x-mock-job': 'fail', 'x-mock-job-polls': '1' } })
    const polled = await openai.videos.retrieve(created.id)
    t.equal(polled.status, 'failed')
    t.equal(polled.error?.code, 'video_generation_failed')
    const res = await fetch(`${mock.url}/v1/videos/${created.id}/content`)
    t.equal(res.status, 400)
    t.equal((await fetch(`${mock.url}/v1/videos/nope`)).status, 404)
  })
})

t.test('Anthropic SDK', async (t) => {
  t.test('messages: a max_tokens above the model\'s limit is refused as the real API does', async (t) => {
    const ask = (max: number): Promise<unknown> => anthropic.messages.create({ model: 'claude-3-5-haiku-20241022', max_tokens: max, messages: [{ role: 'user', content: 'x' }] }).then(() => null, (e: unknown) => e)
    const err = await ask(8193)
    t.ok(err instanceof Anthropic.BadRequestError, 'BadRequestError')
    t.match(err, { error: { type: 'error', error: { type: 'invalid_request_error', message: 'max_tokens: 8193 > 8192, which is the maximum allowed number of output tokens for claude-3-5-haiku-20241022' } } })
    t.equal(await ask(8192), null, 'the limit itself is accepted')
  })

  t.test('messages JSON', async (t) => {
    const r = await anthropic.messages.create({
      model: 'claude-sonnet-4-20250514', max_tokens: 1024, system: 'Be nice', messages: [{ role: 'user', content: 'Hi Claude' }]
    })
    const call = lastCall()
    const block = r.content[0]
    t.equal(block?.type === 'text' ? block.text : undefined, replyChunks('Hi Claude', 5).join(''))
    t.equal(r.stop_reason, 'end_turn')
    t.same(call.produced, { inputTokens: tokensFor('Be niceHi Claude'.length), outputTokens: 5 })
    t.equal(r.usage.input_tokens, call.produced?.inputTokens)
    t.equal(r.usage.output_tokens, 5)
    t.equal(call.provider, 'anthropic')
  })

  t.test('messages stream: event sequence and usage', async (t) => {
    const stream = await anthropic.messages.create({
      model: 'claude-sonnet-4-20250514', max_tokens: 1024, stream: true, messages: [{ role: 'user', content: 'stream it' }]
    }, { headers: { 'x-mock-chunks': '3' } })
    const types: string[] = []
    let inputTokens: number | undefined
    let outputTokens: number | undefined
    let text = ''
    for await (const ev of stream) {
      types.push(ev.type)
      if (ev.type === 'message_start') inputTokens = ev.message.usage.input_tokens
      if (ev.type === 'content_block_delta' && ev.delta.type === 'text_delta') text += ev.delta.text
      if (ev.type === 'message_delta') outputTokens = ev.usage.output_tokens
    }
    const call = lastCall()
    // The SDK drops `ping` events while iterating; the wire has one after content_block_start.
    t.same(types, ['message_start', 'content_block_start', 'content_block_delta', 'content_block_delta',
      'content_block_delta', 'content_block_stop', 'message_delta', 'message_stop'])
    t.match(call.response?.toString(), /event: content_block_start\n.*\n\nevent: ping\ndata: \{"type":"ping"\}\n\nevent: content_block_delta/)
    t.equal(text, replyChunks('stream it', 3).join(''))
    t.equal(inputTokens, call.produced?.inputTokens)
    t.equal(outputTokens, call.produced?.outputTokens)
    t.equal(outputTokens, 3)
    t.match(call.response?.toString(), /^event: message_start\ndata: \{"type":"message_start"/)
  })

  t.test('messages stream helper accumulates the final message', async (t) => {
    const final = await anthropic.messages.stream({
      model: 'claude-sonnet-4-20250514', max_tokens: 2, messages: [{ role: 'user', content: 'one two three' }]
    }).finalMessage()
    const block = final.content[0]
    t.equal(block?.type === 'text' ? block.text : undefined, 'echo: one')
    t.equal(final.stop_reason, 'max_tokens')
    t.equal(final.usage.output_tokens, 2)
  })
})

t.test('Google GenAI SDK', async (t) => {
  t.test('generateContent', async (t) => {
    const r = await genai.models.generateContent({ model: 'gemini-2.5-flash', contents: 'Hi Gemini' })
    const call = lastCall()
    t.equal(r.text, replyChunks('Hi Gemini', 5).join(''))
    t.equal(call.path, '/v1beta/models/gemini-2.5-flash:generateContent')
    t.equal(call.model, 'gemini-2.5-flash')
    t.equal(call.provider, 'gemini')
    t.same(call.produced, { inputTokens: tokensFor(9), outputTokens: 5 })
    t.match(r.usageMetadata, { promptTokenCount: call.produced?.inputTokens, candidatesTokenCount: 5, totalTokenCount: (call.produced?.inputTokens ?? 0) + 5 })
  })

  t.test('generateContentStream (alt=sse)', async (t) => {
    const stream = await genai.models.generateContentStream({ model: 'gemini-2.5-flash', contents: 'stream from gemini' })
    let text = ''
    let last: number | undefined
    let chunks = 0
    for await (const chunk of stream) {
      chunks++
      text += chunk.text ?? ''
      last = chunk.usageMetadata?.candidatesTokenCount ?? last
    }
    const call = lastCall()
    t.match(call.path, /:streamGenerateContent\?alt=sse$/)
    t.equal(chunks, 6, '5 text chunks and a final chunk')
    t.equal(text, replyChunks('stream from gemini', 5).join(''))
    t.equal(last, call.produced?.outputTokens)
    t.equal(call.completed, true)
  })

  t.test('generateVideos → predictLongRunning operation, polled to done', async (t) => {
    let op = await genai.models.generateVideos({ model: 'veo-3.0-generate-001', source: { prompt: 'waves' } })
    t.equal(op.done, false)
    t.match(op.name, /^operations\//)
    op = await genai.operations.getVideosOperation({ operation: op })
    t.notOk(op.done)
    op = await genai.operations.getVideosOperation({ operation: op })
    t.equal(op.done, true)
    t.match(op.response?.generatedVideos?.[0]?.video?.uri, /\/files\/.+\.mp4$/)
  })
})

t.test('Gemini routing', async (t) => {
  t.test('model segment URL-encoded or with a slash', async (t) => {
    const body = { contents: [{ role: 'user', parts: [{ text: 'x' }] }] }
    t.equal((await post('/v1beta/models/genai%2Fgemini-2.5-flash:generateContent', body)).status, 200)
    t.equal(lastCall().model, 'genai/gemini-2.5-flash')
    t.equal((await post('/v1beta/models/genai/gemini-2.5-flash:generateContent', body)).status, 200)
    t.equal(lastCall().model, 'genai/gemini-2.5-flash')
    t.equal((await post('/v1beta/models/gemini-2.5-flash%3AgenerateContent', body)).status, 200)
    t.equal(lastCall().operation, 'gemini.generateContent')
  })

  t.test('streamGenerateContent without alt=sse is a JSON array', async (t) => {
    const res = await post('/v1beta/models/gemini-2.5-flash:streamGenerateContent', { contents: [{ parts: [{ text: 'array please' }] }] }, { 'x-mock-chunks': '3' })
    const arr = await res.json() as Array<{ candidates: Array<{ finishReason?: string }>, usageMetadata: { candidatesTokenCount: number } }>
    t.equal(arr.length, 4)
    t.equal(arr.at(-1)?.candidates[0]?.finishReason, 'STOP')
    t.equal(arr.at(-1)?.usageMetadata.candidatesTokenCount, 3)
  })

  t.test(':predict (Imagen) answers one image per sampleCount', async (t) => {
    const res = await post('/v1beta/models/imagen-4.0-generate-001:predict', { instances: [{ prompt: 'a lighthouse' }], parameters: { sampleCount: 2 } })
    const r = await res.json() as { predictions: Array<{ bytesBase64Encoded: string, mimeType: string }> }
    t.equal(r.predictions.length, 2)
    t.equal(r.predictions[0]?.mimeType, 'image/png')
    t.ok(Buffer.from(r.predictions[0]?.bytesBase64Encoded ?? '', 'base64').subarray(0, 8).equals(PNG_SIGNATURE))
    t.equal(lastCall().operation, 'gemini.predict')
    t.same(lastCall().produced, { inputTokens: tokensFor('a lighthouse'.length), outputTokens: 0, images: 2 })
    const one = await (await post('/v1beta/models/imagen-4.0-generate-001:predict', { instances: [{ prompt: 'x' }] })).json() as { predictions: unknown[] }
    t.equal(one.predictions.length, 1, 'default sampleCount is 1')
  })

  t.test('editImage and upscaleImage', async (t) => {
    const edit = await (await post('/v1beta/models/imagen-4:editImage', { instances: [{ prompt: 'p' }], parameters: { sampleCount: 3 } })).json() as { predictions: unknown[] }
    t.equal(edit.predictions.length, 3)
    const up = await (await post('/v1beta/models/imagen-4:upscaleImage', { instances: [{}], parameters: { sampleCount: 3 } })).json() as { predictions: unknown[] }
    t.equal(up.predictions.length, 1)
    t.equal(lastCall().produced?.images, 1)
  })
})

t.test('music jobs', async (t) => {
  const created = await (await post('/v1/music/generations', { model: 'melody-1', prompt: 'song', lyrics: '[verse] la' })).json() as { id: string, status: string }
  t.equal(created.status, 'queued')
  const first = await (await fetch(`${mock.url}/v1/jobs/${created.id}`)).json() as { status: string }
  t.equal(first.status, 'in_progress')
  const done = await (await fetch(`${mock.url}/v1/jobs/${created.id}`)).json() as { status: string, result?: { audio_url: string } }
  t.equal(done.status, 'completed')
  const audio = await fetch(done.result?.audio_url ?? '')
  t.equal(audio.headers.get('content-type'), 'audio/mpeg')
  t.ok((await audio.arrayBuffer()).byteLength > 0)

  mock.setBehaviour({ jobOutcome: 'failed', jobPolls: 1 })
  const bad = await (await post('/v1/music/generations', { model: 'melody-1', prompt: 'x' })).json() as { id: string }
  const failed = await (await fetch(`${mock.url}/v1/jobs/${bad.id}`)).json() as { status: string, result?: unknown }
  t.equal(failed.status, 'failed')
  t.equal(failed.result, undefined)
})

t.test('failure knobs', async (t) => {
  t.test('x-mock-status answers provider-shaped errors', async (t) => {
    const oa = await post('/v1/chat/completions', chatBody('x'), { 'x-mock-status': '500' })
    t.equal(oa.status, 500)
    t.match(await oa.json(), { error: { type: 'server_error', message: String } })
    const an = await post('/v1/messages', { model: 'c', max_tokens: 5, messages: [] }, { 'x-mock-status': '529' })
    t.equal(an.status, 529)
    t.match(await an.json(), { type: 'error', error: { type: 'overloaded_error' } })
    const gm = await post('/v1beta/models/g:generateContent', {}, { 'x-mock-status': '503', 'x-mock-retry-after': '7' })
    t.equal(gm.status, 503)
    t.equal(gm.headers.get('retry-after'), '7')
    t.match(await gm.json(), { error: { code: 503, status: 'UNAVAILABLE' } })
    t.equal(lastCall().status, 503)
  })

  t.test('SDKs surface the error status', async (t) => {
    mock.once({ status: 429 })
    const oa: unknown = await openai.chat.completions.create({ model: 'gpt-4o', messages: [] }).catch((e: unknown) => e)
    t.ok(oa instanceof OpenAI.RateLimitError, 'OpenAI RateLimitError')
    mock.once({ status: 500 })
    const an: unknown = await anthropic.messages.create({ model: 'c', max_tokens: 5, messages: [] }).catch((e: unknown) => e)
    t.ok(an instanceof Anthropic.InternalServerError, 'Anthropic InternalServerError')
    t.match(an, { status: 500, error: { type: 'error', error: { type: 'api_error' } } })
  })

  t.test('once applies to one request, setBehaviour until reset', async (t) => {
    mock.once({ status: 502 })
    t.equal((await post('/v1/chat/completions', chatBody('a'))).status, 502)
    t.equal((await post('/v1/chat/completions', chatBody('a'))).status, 200)
    mock.setBehaviour({ status: 500 })
    t.equal((await post('/v1/chat/completions', chatBody('a'))).status, 500)
    t.equal((await post('/v1/chat/completions', chatBody('a'))).status, 500)
    mock.reset()
    t.equal((await post('/v1/chat/completions', chatBody('a'))).status, 200)
  })

  t.test('x-mock-delay-ms waits before the headers', async (t) => {
    const start = Date.now()
    const res = await post('/v1/chat/completions', chatBody('slow'), { 'x-mock-delay-ms': '200' })
    t.ok(Date.now() - start >= 190, 'delayed')
    t.equal(res.status, 200)
    mock.once({ delayMs: 150 })
    const s2 = Date.now()
    await (await post('/v1/chat/completions', chatBody('slow'))).text()
    t.ok(Date.now() - s2 >= 140, 'programmatic delay')
  })

  t.test('x-mock-chunk-delay-ms spaces the chunks', async (t) => {
    const start = Date.now()
    const res = await post('/v1/chat/completions', chatBody('tick tock', { stream: true }), { 'x-mock-chunks': '4', 'x-mock-chunk-delay-ms': '50' })
    const reader = res.body?.getReader()
    let reads = 0
    if (reader !== undefined) for (let r = await reader.read(); !r.done; r = await reader.read()) reads++
    t.ok(Date.now() - start >= 190, 'four delays')
    t.ok(reads >= 4, `arrived in separate reads (${reads})`)
  })

  t.test('x-mock-cut-after breaks a stream after K chunks', async (t) => {
    const res = await post('/v1/chat/completions', chatBody('cut me off please', { stream: true, stream_options: { include_usage: true } }), { 'x-mock-cut-after': '2' })
    t.equal(res.status, 200)
    await t.rejects(res.text(), 'client sees a broken stream')
    await mock.waitForIdle()
    const call = lastCall()
    t.equal(call.cut, true)
    t.equal(call.completed, false)
    t.equal(call.clientAborted, false)
    t.same(call.produced, { inputTokens: tokensFor('cut me off please'.length), outputTokens: 2 })
    t.equal(call.reported, null, 'no usage was sent')
    const sent = call.response?.toString() ?? ''
    t.equal(sseJson(sent).length, 3, 'role chunk + 2 content chunks')
    t.notMatch(sent, /\[DONE\]/)
  })

  t.test('cut-after: the client receives exactly the K chunks before the break', async (t) => {
    const res = await post('/v1/chat/completions', chatBody('one two three four', { stream: true }), { 'x-mock-cut-after': '3', 'x-mock-chunk-delay-ms': '5' })
    const reader = res.body?.getReader()
    const decoder = new TextDecoder()
    let received = ''
    let failed = false
    try {
      for (;;) {
        const r = await reader?.read()
        if (r === undefined || r.done) break
        received += decoder.decode(r.value, { stream: true })
      }
    } catch {
      failed = true
    }
    t.equal(failed, true, 'the read fails')
    const chunks = sseJson(received) as Array<{ choices: Array<{ delta: { content?: string } }> }>
    t.equal(chunks.length, 4, 'role chunk + 3 content chunks')
    t.equal(chunks.map((c) => c.choices[0]?.delta.content ?? '').join(''), replyChunks('one two three four', 3).join(''))
    t.equal(received, lastCall().response?.toString(), 'client got everything the mock sent')
  })

  t.test('cut-after 0 still sends the headers', async (t) => {
    const res = await post('/v1beta/models/g:streamGenerateContent?alt=sse', { contents: [{ parts: [{ text: 'x' }] }] }, { 'x-mock-cut-after': '0' })
    t.equal(res.status, 200)
    t.equal(res.headers.get('content-type'), 'text/event-stream')
    await t.rejects(res.text())
    t.equal(lastCall().produced?.outputTokens, 0)
  })

  t.test('cut-after on Anthropic and Gemini streams, and on a JSON body', async (t) => {
    mock.setBehaviour({ cutAfter: 1 })
    const an = await post('/v1/messages', { model: 'c', max_tokens: 50, stream: true, messages: [{ role: 'user', content: 'x' }] })
    await t.rejects(an.text())
    t.equal(lastCall().produced?.outputTokens, 1)
    const gm = await post('/v1beta/models/g:streamGenerateContent?alt=sse', { contents: [{ parts: [{ text: 'x' }] }] })
    await t.rejects(gm.text())
    t.equal(lastCall().produced?.outputTokens, 1)
    t.same(lastCall().reported, { inputTokens: 1, outputTokens: 1 }, 'running usage of the chunk that was sent')
    const js = await post('/v1/chat/completions', chatBody('x'))
    await t.rejects(js.text())
    t.equal(lastCall().cut, true)
    await t.rejects(anthropic.messages.create({ model: 'c', max_tokens: 50, stream: true, messages: [{ role: 'user', content: 'x' }] }).then(async (s) => {
      const events: unknown[] = []
      for await (const ev of s) events.push(ev)
    }), 'the SDK notices the broken stream')
  })

  t.test('hang: no answer until the client aborts; sockets are released', async (t) => {
    const local = await startMockUpstream()
    t.teardown(() => local.close())
    const ac = new AbortController()
    const pending = fetch(`${local.url}/v1/chat/completions`, {
      method: 'POST', headers: { 'content-type': 'application/json', 'x-mock-hang': '1' }, body: JSON.stringify(chatBody('hang')), signal: ac.signal
    })
    await local.waitForCalls(1)
    await new Promise((resolve) => setTimeout(resolve, 50))
    t.equal(local.activeRequests(), 1)
    t.equal(local.openConnections(), 1)
    ac.abort()
    await t.rejects(pending)
    await local.waitForIdle()
    t.equal(local.calls[0]?.clientAborted, true)
    t.equal(local.calls[0]?.completed, false)
    t.equal(local.calls[0]?.status, undefined)
    const deadline = Date.now() + 2000
    while (local.openConnections() > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10))
    t.equal(local.openConnections(), 0)
  })

  t.test('hang + close(): close destroys hung sockets and returns', async (t) => {
    const local = await startMockUpstream()
    local.setBehaviour({ hang: true })
    const pending = fetch(`${local.url}/v1/messages`, { method: 'POST', body: '{}' })
    const rejected = t.rejects(pending, 'client sees the connection die')
    await local.waitForCalls(1)
    const start = Date.now()
    await local.close()
    t.ok(Date.now() - start < 1000, 'close is prompt')
    await rejected
    t.equal(local.openConnections(), 0)
  })

  t.test('client going away mid-stream stops the stream', async (t) => {
    const ac = new AbortController()
    const res = await post('/v1/chat/completions', chatBody('long', { stream: true }), { 'x-mock-chunks': '50', 'x-mock-chunk-delay-ms': '20' }, ac.signal)
    const reader = res.body?.getReader()
    await reader?.read()
    await reader?.read()
    ac.abort()
    await mock.waitForIdle()
    const call = lastCall()
    t.equal(call.completed, false)
    t.equal(call.clientAborted, true)
    t.ok((call.produced?.outputTokens ?? 0) < 50, `stopped early (${call.produced?.outputTokens ?? -1} chunks)`)
  })

  t.test('usage variants', async (t) => {
    const none = await (await post('/v1/chat/completions', chatBody('x'), { 'x-mock-usage': 'none' })).json() as Record<string, unknown>
    t.notOk('usage' in none)
    t.equal(lastCall().reported, null)
    t.same(lastCall().produced, { inputTokens: 1, outputTokens: 5 }, 'produced is still recorded')

    const streamNone = await (await post('/v1/chat/completions', chatBody('x', { stream: true, stream_options: { include_usage: true } }), { 'x-mock-usage': 'none' })).text()
    t.notOk(sseJson(streamNone).some((c) => typeof c === 'object' && c !== null && 'usage' in c && (c as { usage: unknown }).usage !== null))

    const neg = await (await post('/v1/chat/completions', chatBody('x'), { 'x-mock-usage': 'negative' })).json() as { usage: { prompt_tokens: number, completion_tokens: number } }
    t.ok(neg.usage.prompt_tokens < 0 && neg.usage.completion_tokens < 0)
    t.same(lastCall().reported, { inputTokens: neg.usage.prompt_tokens, outputTokens: neg.usage.completion_tokens })

    const absurd = await (await post('/v1/messages', { model: 'c', max_tokens: 9, messages: [{ role: 'user', content: 'x' }] }, { 'x-mock-usage': 'absurd' })).json() as { usage: { input_tokens: number, output_tokens: number } }
    t.equal(absurd.usage.input_tokens, 1e15)
    t.equal(absurd.usage.output_tokens, 1e15)

    const media = await (await post('/v1/chat/completions', chatBody('x'), { 'x-mock-input-tokens': '200000' })).json() as { usage: { prompt_tokens: number } }
    t.equal(media.usage.prompt_tokens, 200_000, 'x-mock-input-tokens: the input a provider counts for media fetched by URL')
    t.same(lastCall().produced, { inputTokens: 200_000, outputTokens: 5 })
    const mediaMsg = await (await post('/v1/messages', { model: 'c', max_tokens: 9, messages: [{ role: 'user', content: 'x' }] }, { 'x-mock-input-tokens': '7' })).json() as { usage: { input_tokens: number } }
    t.equal(mediaMsg.usage.input_tokens, 7)

    mock.setBehaviour({ usage: 'none' })
    const gm = await (await post('/v1beta/models/g:generateContent', { contents: [{ parts: [{ text: 'x' }] }] })).json() as Record<string, unknown>
    t.notOk('usageMetadata' in gm)
    const an = await (await post('/v1/messages', { model: 'c', max_tokens: 9, stream: true, messages: [{ role: 'user', content: 'x' }] })).text()
    t.notMatch(an, /"usage"/)
  })
})

t.test('recording', async (t) => {
  t.test('exact body bytes, lowercased headers, path with query, parsed JSON', async (t) => {
    const raw = '{ "model" : "gpt-4o",\n  "messages": [{"role":"user","content":"héllo ✓"}] }'
    await (await post('/v1/chat/completions?trace=1', raw, { 'X-Custom-Thing': 'Yes' })).text()
    const call = lastCall()
    t.ok(call.body.equals(Buffer.from(raw, 'utf8')), 'byte-exact body')
    t.equal(call.method, 'POST')
    t.equal(call.path, '/v1/chat/completions?trace=1')
    t.equal(call.headers['x-custom-thing'], 'Yes')
    t.equal(call.headers['content-type'], 'application/json')
    t.same(call.json, JSON.parse(raw))
    t.same(call.produced, { inputTokens: tokensFor('héllo ✓'.length), outputTokens: 5 })
    t.equal(call.seq, 1)
  })

  t.test('multipart body bytes are kept exactly', async (t) => {
    const form = new FormData()
    form.set('model', 'whisper-1')
    form.set('file', new Blob([makeWav(1)], { type: 'audio/wav' }), 'a.wav')
    const req = new Request(`${mock.url}/v1/audio/transcriptions`, { method: 'POST', body: form })
    const bytes = Buffer.from(await req.clone().arrayBuffer())
    await (await fetch(req)).text()
    t.ok(lastCall().body.equals(bytes))
    t.equal(lastCall().produced?.seconds, 1)
  })

  t.test('unknown path and wrong method → 404 JSON', async (t) => {
    const a = await post('/v2/whatever', {})
    t.equal(a.status, 404)
    t.match(await a.json(), { error: { message: /Unknown request URL/ } })
    const b = await fetch(`${mock.url}/v1/chat/completions`)
    t.equal(b.status, 404)
    t.equal(b.headers.get('content-type'), 'application/json')
    t.equal(mock.calls.length, 2)
  })

  t.test('malformed JSON → 400 provider error', async (t) => {
    const res = await post('/v1/messages', '{"model":')
    t.equal(res.status, 400)
    t.match(await res.json(), { type: 'error', error: { type: 'invalid_request_error' } })
  })
})

t.test('connections', async (t) => {
  t.test('keep-alive reuses one socket', async (t) => {
    const local = await startMockUpstream()
    t.teardown(() => local.close())
    for (let i = 0; i < 5; i++) {
      await (await fetch(`${local.url}/v1/chat/completions`, { method: 'POST', body: JSON.stringify(chatBody('k')) })).text()
      // undici frees the connection a tick after the body ends
      await new Promise((resolve) => setImmediate(resolve))
    }
    t.equal(local.openConnections(), 1)
    t.equal(local.calls.length, 5)
  })

  t.test('many concurrent slow streams', async (t) => {
    const local = await startMockUpstream({ recordResponses: false })
    t.teardown(() => local.close())
    local.setBehaviour({ chunks: 5, chunkDelayMs: 20 })
    const n = 300
    const start = Date.now()
    const texts = await Promise.all(Array.from({ length: n }, async (_, i) =>
      (await fetch(`${local.url}/v1/chat/completions`, { method: 'POST', body: JSON.stringify(chatBody(`n${i}`, { stream: true })) })).text()))
    // Served one after another, the streams would take n × 5 × 20 ms = 30 s; the bound is half of
    // that, so it tells concurrent from serial serving on a loaded machine too (about 0.3 s quiet).
    const serialMs = n * 5 * 20
    t.ok(Date.now() - start < serialMs / 2, `served concurrently: took ${Date.now() - start} ms (serially ≥ ${serialMs} ms)`)
    t.ok(texts.every((s) => s.endsWith('data: [DONE]\n\n')))
    await local.waitForIdle()
    t.equal(local.calls.filter((c) => c.completed).length, n)
    t.equal(local.calls[0]?.response, undefined, 'responses not recorded')
  })
})
