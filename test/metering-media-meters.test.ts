import fc from 'fast-check'
import t from 'tap'
import { SPEECH_BYTES_PER_SECOND, SPEECH_TOKENS_PER_SECOND, TRANSCRIPTION_TOKENS_PER_SECOND } from '../plugins/concerns/metering/audio-meters.js'
import { ESTIMATED_IMAGE_OUTPUT_TOKENS } from '../plugins/concerns/metering/image-meter.js'
import { createMeter, type Meter, type MeterInput } from '../plugins/concerns/metering/meter.js'
import { emptyUsage, type Usage } from '../plugins/concerns/metering/usage.js'
import { cut } from './helpers/chunks.js'
import { meterOf } from './helpers/operations.js'

function feed (input: MeterInput, chunks: readonly Buffer[]): Meter {
  const meter = createMeter(input)
  const onChunk = meter.onChunk
  for (const c of chunks) onChunk(c)
  return meter
}

const run = (input: MeterInput, body: string | Buffer): Usage => feed(input, [Buffer.from(body)]).finish()

/** The same usage (and job id) for random splits of the body. */
function splitInvariant (t: { pass: (message: string) => boolean }, input: MeterInput, body: Buffer, runs = 100): void {
  const m = feed(input, [body])
  const whole = JSON.stringify([m.finish(), m.jobId])
  fc.assert(fc.property(fc.array(fc.nat(body.length), { maxLength: 30 }), (points) => {
    const s = feed(input, cut(body, points))
    const got = JSON.stringify([s.finish(), s.jobId])
    if (got !== whole) throw new Error(`${got} !== ${whole}`)
  }), { numRuns: runs })
  t.pass(`the same usage for ${runs} random splits`)
}

const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=='
const IMAGE_USAGE = '{"input_tokens":50,"input_tokens_details":{"image_tokens":40,"text_tokens":10},"output_tokens":4160,"total_tokens":4210}'
const gptImage = (n: number, usage = IMAGE_USAGE, b64 = PNG): string =>
  `{"created":1713833628,"background":"opaque","data":[${Array.from({ length: n }, () => `{"b64_json":"${b64}"}`).join(',')}],"output_format":"png","quality":"high","size":"1024x1024","usage":${usage}}`
const dalle = '{"created":1713833628,"data":[{"revised_prompt":"A cute baby sea otter floating on its back, \\"photorealistic\\".","url":"https://oaidalleapiprodscus.blob.core.windows.net/private/img-abc.png?st=2024"}]}'
const imagen = `{"predictions":[{"mimeType":"image/png","bytesBase64Encoded":"${PNG}"},{"raiFilteredReason":"Filtered by safety policy."},{"bytesBase64Encoded":"${PNG}","mimeType":"image/png","prompt":"enhanced"}]}`
const imageRequest = { json: { model: 'openai/gpt-image-1', prompt: 'A cute baby sea otter', n: 3 } }

t.test('images: data[] items are counted as reported images, gpt-image tokens too', async (t) => {
  const input: MeterInput = { meter: meterOf('images.generations'), sse: false, request: imageRequest }
  t.same(run(input, gptImage(3)), { ...emptyUsage(), images: 3, inputTokens: 50, outputTokens: 4160 })
  t.same(run(input, dalle), { ...emptyUsage(), images: 1 })
  t.same(run({ meter: meterOf('genai.generateImages'), sse: false, request: { json: { instances: [{ prompt: 'x' }], parameters: { sampleCount: 3 } } } }, imagen), { ...emptyUsage(), images: 2 }, 'a filtered prediction is not an image')
  for (const operation of ['genai.editImage', 'genai.upscaleImage']) {
    t.same(run({ meter: meterOf(operation), sse: false, request: {} }, imagen).images, 2, operation)
  }
  splitInvariant(t, input, Buffer.from(gptImage(2)))
  splitInvariant(t, { meter: meterOf('genai.generateImages'), sse: false, request: {} }, Buffer.from(imagen))
})

t.test('images: a 24 MB answer is counted while streaming, in random chunk sizes', async (t) => {
  const big = Buffer.from(gptImage(3, IMAGE_USAGE, 'A'.repeat(8 * 1024 * 1024)))
  const input: MeterInput = { meter: meterOf('images.generations'), sse: false, request: imageRequest }
  const points = Array.from({ length: 400 }, (_, i) => Math.floor(((i * 7919) % 400) * big.length / 400))
  t.same(feed(input, cut(big, points)).finish(), { ...emptyUsage(), images: 3, inputTokens: 50, outputTokens: 4160 })
})

t.test('images: truncated, garbage and hostile answers are estimates', async (t) => {
  const input: MeterInput = { meter: meterOf('images.generations'), sse: false, request: imageRequest }
  const truncated = gptImage(3).slice(0, gptImage(3).lastIndexOf('{"b64_json"') + 20)
  t.match(run(input, truncated), { images: 2, reported: false })
  t.match(run(input, '<html>502 Bad Gateway</html>'), { images: 3, reported: false }, 'unreadable: the requested n')
  t.match(run(input, ''), { images: 0, reported: false })
  for (const bad of ['-50', '1e15', '"50"']) {
    const u = run(input, gptImage(2, IMAGE_USAGE.replace('"output_tokens":4160', `"output_tokens":${bad}`)))
    t.same(u, { ...emptyUsage(), images: 2, inputTokens: 50, outputTokens: 2 * ESTIMATED_IMAGE_OUTPUT_TOKENS, reported: false }, `output_tokens ${bad}`)
  }
  const tokenBilled = run({ ...input, unit: 'token' }, dalle)
  t.match(tokenBilled, { images: 1, outputTokens: ESTIMATED_IMAGE_OUTPUT_TOKENS, reported: false }, 'a token-billed model that reported no tokens')
})

t.test('images: a streamed gpt-image answer counts completed images, not partial ones', async (t) => {
  const body = Buffer.from([
    `event: image_generation.partial_image\ndata: {"type":"image_generation.partial_image","b64_json":"${PNG}","created_at":1620000000,"size":"1024x1024","quality":"high","background":"opaque","output_format":"png","partial_image_index":0}\n\n`,
    `event: image_generation.partial_image\ndata: {"type":"image_generation.partial_image","b64_json":"${PNG}","created_at":1620000000,"size":"1024x1024","quality":"high","background":"opaque","output_format":"png","partial_image_index":1}\n\n`,
    `event: image_generation.completed\ndata: {"type":"image_generation.completed","b64_json":"${PNG}","created_at":1620000000,"size":"1024x1024","quality":"high","background":"opaque","output_format":"png","usage":{"total_tokens":100,"input_tokens":50,"output_tokens":50,"input_tokens_details":{"text_tokens":10,"image_tokens":40}}}\n\n`
  ].join(''))
  const input: MeterInput = { meter: meterOf('images.generations'), sse: true, request: imageRequest }
  t.same(run(input, body), { ...emptyUsage(), images: 1, inputTokens: 50, outputTokens: 50 })
  splitInvariant(t, input, body)
})

t.test('images.edits: one call per 2xx answer, none for an error', async (t) => {
  const input: MeterInput = { meter: meterOf('images.edits'), sse: false, request: { multipartFields: { model: 'openai/gpt-image-1-edit', prompt: 'add a hat' } } }
  t.same(run(input, gptImage(1)), { ...emptyUsage(), calls: 1, images: 1, inputTokens: 50, outputTokens: 4160 })
  t.same(run(input, '{"error":{"message":"Invalid image.","type":"invalid_request_error","param":"image","code":null}}'), emptyUsage())
  t.same(run({ ...input, status: 400 }, '{"error":{"message":"bad"}}'), emptyUsage())
})

t.test('transcriptions: duration usage, token usage, verbose_json duration', async (t) => {
  const input: MeterInput = { meter: meterOf('audio.transcriptions'), sse: false, request: { multipartFields: { model: 'openai/whisper-1' }, audioSeconds: 10 } }
  t.same(run(input, '{"text":"Imagine the wildest idea that you\'ve ever had.","usage":{"type":"duration","seconds":9}}'), { ...emptyUsage(), audioSeconds: 9 })
  t.same(run(input, '{"text":"Hi","usage":{"type":"tokens","input_tokens":14,"input_token_details":{"text_tokens":0,"audio_tokens":14},"output_tokens":45,"total_tokens":59}}'), { ...emptyUsage(), inputTokens: 14, outputTokens: 45 })
  const verbose = JSON.stringify({ task: 'transcribe', language: 'english', duration: 8.470000267028809, text: 'The beach was a popular spot.', segments: [{ id: 0, seek: 0, start: 0, end: 3.32, text: ' The beach was a popular spot.', tokens: [50364], temperature: 0, avg_logprob: -0.28, compression_ratio: 1.2, no_speech_prob: 0.0093 }] })
  t.same(run(input, verbose), { ...emptyUsage(), audioSeconds: 8.470000267028809 })
  splitInvariant(t, input, Buffer.from(verbose))
})

t.test('transcriptions: nothing reported → seconds from the upload, tokens estimated', async (t) => {
  const request = { multipartFields: { model: 'openai/gpt-4o-mini-transcribe', response_format: 'text', prompt: 'Names: Zoë' }, audioSeconds: 12 }
  const text = 'Bonjour à tous, ceci est un test. 👋\n'
  const u = run({ meter: meterOf('audio.transcriptions'), sse: false, request }, text)
  t.same(u, {
    ...emptyUsage(),
    audioSeconds: 12,
    inputTokens: Math.ceil(12 * TRANSCRIPTION_TOKENS_PER_SECOND) + Math.ceil(10 / 4),
    outputTokens: Math.ceil([...text].length / 4),
    reported: false
  })
  for (const bad of ['-9', '1e15', '"9"', 'null']) {
    const h = run({ meter: meterOf('audio.transcriptions'), sse: false, request }, `{"text":"abc","usage":{"type":"duration","seconds":${bad}}}`)
    t.match(h, { audioSeconds: 12, reported: false }, `seconds ${bad}`)
  }
  t.match(run({ meter: meterOf('audio.transcriptions'), sse: false, request: {} }, '{"text":"abc"}'), { audioSeconds: 0, reported: false }, 'no header, no report')
})

t.test('transcriptions: streamed, usage on transcript.text.done', async (t) => {
  const body = Buffer.from([
    'data: {"type":"transcript.text.delta","delta":"I","logprobs":[{"token":"I","logprob":-0.00007,"bytes":[73]}]}\n\n',
    'data: {"type":"transcript.text.delta","delta":" see skies of blue ☁️","logprobs":[]}\n\n',
    'data: {"type":"transcript.text.done","text":"I see skies of blue ☁️","logprobs":[],"usage":{"type":"tokens","input_tokens":14,"input_token_details":{"text_tokens":10,"audio_tokens":4},"output_tokens":31,"total_tokens":45}}\n\n'
  ].join(''))
  const input: MeterInput = { meter: meterOf('audio.transcriptions'), sse: true, request: { multipartFields: { stream: 'true' }, audioSeconds: 4 } }
  t.same(run(input, body), { ...emptyUsage(), inputTokens: 14, outputTokens: 31 })
  splitInvariant(t, input, body)
  const cutShort = body.subarray(0, body.indexOf('data: {"type":"transcript.text.done"'))
  t.match(run(input, cutShort), { outputTokens: Math.ceil([...'I see skies of blue ☁️'].length / 4), audioSeconds: 4, reported: false })
})

t.test('speech: characters in code points are our own count; token-billed output is estimated from the audio', async (t) => {
  const json = { model: 'openai/tts-1', input: 'Today is a wonderful day to build something people love! 😀🎉', voice: 'coral', response_format: 'mp3' }
  const characters = [...json.input].length
  const audio = Buffer.alloc(48_000, 0xff) // 3 s of mp3 at the assumed 16 kB/s
  const perChar = run({ meter: meterOf('audio.speech'), sse: false, request: { json }, unit: 'character' }, audio)
  t.equal(perChar.characters, characters)
  t.equal(perChar.characters, 59, 'emoji count once')
  t.equal(perChar.reported, true)
  const perToken = run({ meter: meterOf('audio.speech'), sse: false, request: { json: { ...json, instructions: 'Speak cheerfully.' } }, unit: 'token' }, audio)
  t.same(perToken, {
    ...emptyUsage(),
    characters,
    inputTokens: Math.ceil((characters + 17) / 4),
    outputTokens: Math.ceil((48_000 / (SPEECH_BYTES_PER_SECOND.mp3 ?? 0)) * SPEECH_TOKENS_PER_SECOND),
    reported: false
  })
  const chunks = cut(audio, [1, 100, 4000, 30000])
  t.same(feed({ meter: meterOf('audio.speech'), sse: false, request: { json }, unit: 'token' }, chunks).finish().outputTokens, perToken.outputTokens)
})

t.test('speech: streamed with usage on speech.audio.done', async (t) => {
  const audio = Buffer.alloc(9000, 7).toString('base64')
  const body = Buffer.from(`data: {"type":"speech.audio.delta","audio":"${audio}"}\n\ndata: {"type":"speech.audio.delta","audio":"${audio}"}\n\ndata: {"type":"speech.audio.done","usage":{"input_tokens":14,"output_tokens":101,"total_tokens":115}}\n\n`)
  const input: MeterInput = { meter: meterOf('audio.speech'), sse: false, request: { json: { input: 'Hello world', stream_format: 'sse' } }, unit: 'token' }
  t.same(run(input, body), { ...emptyUsage(), characters: 11, inputTokens: 14, outputTokens: 101 })
  splitInvariant(t, input, body)
  const noUsage = body.subarray(0, body.indexOf('data: {"type":"speech.audio.done"'))
  t.match(run(input, noUsage), { outputTokens: Math.ceil((18_000 / 16_000) * SPEECH_TOKENS_PER_SECOND), reported: false }, 'estimated from the decoded audio size')
})

t.test('jobs: one job with the upstream id, none for an error', async (t) => {
  const video = '{"id":"video_68d7512d07848190b3e45da0ecbebcde004da08e1e0678d5","object":"video","created_at":1758941485,"status":"queued","model":"sora-2","progress":0,"seconds":"8","size":"1280x720","error":null,"remixed_from_video_id":null}'
  const cases: Array<[string, string, string | undefined, number]> = [
    ['videos.create', video, 'video_68d7512d07848190b3e45da0ecbebcde004da08e1e0678d5', 1],
    ['music.create', '{"id":"job_mock_1","object":"job","status":"queued","model":"melody-1","created_at":1758941485}', 'job_mock_1', 1],
    ['genai.generateVideos', '{"name":"models/veo-3.0-generate-001/operations/zlwy2s8p4srm","done":false}', 'models/veo-3.0-generate-001/operations/zlwy2s8p4srm', 1],
    ['genai.generateVideos', '{"name":"operations/x","done":true,"error":{"code":13,"message":"failed"}}', undefined, 0],
    ['videos.create', '{"error":{"message":"Invalid size","type":"invalid_request_error"}}', undefined, 0]
  ]
  for (const [operation, body, id, jobs] of cases) {
    const m = feed({ meter: meterOf(operation), sse: false, request: { json: { prompt: 'a cat' } } }, [Buffer.from(body)])
    t.same(m.finish(), { ...emptyUsage(), jobs }, `${operation} usage`)
    t.equal(m.jobId, id, `${operation} job id`)
  }
  splitInvariant(t, { meter: meterOf('videos.create'), sse: false, request: {} }, Buffer.from(video))
  const noId = feed({ meter: meterOf('music.create'), sse: false, request: {} }, [Buffer.from('{"status":"queued"}')])
  t.same(noId.finish(), { ...emptyUsage(), jobs: 1, reported: false })
  t.equal(noId.jobId, undefined)
  const failed = feed({ meter: meterOf('videos.create'), sse: false, request: {}, status: 400 }, [Buffer.from(video)])
  t.same(failed.finish(), emptyUsage())
  t.equal(failed.jobId, undefined)
})
