import t from 'tap'
import fc from 'fast-check'
import type { PriceConfig } from '../plugins/foundation/config/types.js'
import { mp3FrameAt, readAudioDuration } from '../plugins/foundation/pricing/audio-duration.js'
import { compilePrice } from '../plugins/foundation/pricing/compile.js'
import { costOf } from '../plugins/foundation/pricing/cost.js'
import { BYTES_PER_TOKEN, DEFAULT_MAX_OUTPUT_TOKENS, type WorstCaseInput, worstCaseUsage } from '../plugins/foundation/pricing/worst-case.js'
import type { ParamPath } from '../plugins/foundation/operations/index.js'
import { boundsOf, opOf } from './helpers/operations.js'
import type { Usage } from '../plugins/foundation/shapes/index.js'

const TOKEN: PriceConfig = { unit: 'token', input: '2.50', cached_input: '1.25', output: '10.00', per: 1000000 }
const HEAD = 64 * 1024

function jsonRequest (operation: string, body: Record<string, unknown>, model: WorstCaseInput['model'] = { pricing: TOKEN, maxOutputTokens: 16384 }): WorstCaseInput {
  return { bounds: boundsOf(operation), model, json: body, bodyBytes: Buffer.byteLength(JSON.stringify(body)) }
}
function upload (file: Buffer, operation = 'audio.transcriptions', mimeType = 'audio/wav'): WorstCaseInput {
  return {
    bounds: boundsOf(operation),
    model: { pricing: { unit: 'audio_second', unit_price: '0.0001' } },
    multipart: { fields: { model: 'openai/whisper-1' }, files: [{ field: 'file', size: file.length, head: file.subarray(0, HEAD), mimeType }] },
    bodyBytes: file.length + 300
  }
}

/** A PCM WAV of `seconds` at `rate` Hz, `channels` × 16 bits, optionally with a LIST chunk before data. */
function wavFile (seconds: number, rate: number, channels = 1, listBytes = 0): Buffer {
  const blockAlign = channels * 2
  const dataBytes = Math.round(seconds * rate) * blockAlign
  const fmt = Buffer.alloc(24)
  fmt.write('fmt ', 0, 'latin1'); fmt.writeUInt32LE(16, 4); fmt.writeUInt16LE(1, 8); fmt.writeUInt16LE(channels, 10)
  fmt.writeUInt32LE(rate, 12); fmt.writeUInt32LE(rate * blockAlign, 16); fmt.writeUInt16LE(blockAlign, 20); fmt.writeUInt16LE(16, 22)
  const list = listBytes > 0 ? Buffer.concat([Buffer.from('LIST', 'latin1'), Buffer.alloc(4), Buffer.alloc(listBytes, 0x20)]) : Buffer.alloc(0)
  if (listBytes > 0) list.writeUInt32LE(listBytes, 4)
  const data = Buffer.alloc(8 + dataBytes)
  data.write('data', 0, 'latin1'); data.writeUInt32LE(dataBytes, 4)
  const riff = Buffer.alloc(12)
  riff.write('RIFF', 0, 'latin1'); riff.writeUInt32LE(4 + fmt.length + list.length + data.length, 4); riff.write('WAVE', 8, 'latin1')
  return Buffer.concat([riff, fmt, list, data])
}

/** `frames` MPEG frames with header `header` (4 bytes), preceded by an ID3v2 tag of `id3` body bytes. */
function mp3File (header: number[], frames: number, id3 = 0, firstFrame?: (f: Buffer) => void): Buffer {
  const parsed = mp3FrameAt(Buffer.from(header), 0)
  if (!parsed) throw new Error('bad test header')
  const out: Buffer[] = []
  if (id3 > 0) out.push(Buffer.from([0x49, 0x44, 0x33, 4, 0, 0, (id3 >> 21) & 0x7f, (id3 >> 14) & 0x7f, (id3 >> 7) & 0x7f, id3 & 0x7f]), Buffer.alloc(id3))
  for (let i = 0; i < frames; i++) {
    const f = Buffer.alloc(parsed.length)
    Buffer.from(header).copy(f)
    if (i === 0 && firstFrame) firstFrame(f)
    out.push(f)
  }
  return Buffer.concat(out)
}
const MPEG1_L3_128K_44K = [0xff, 0xfb, 0x90, 0x00] // 417-byte frames
const MPEG2_L3_16K_16K_MONO = [0xff, 0xf3, 0x28, 0xc0] // 72-byte frames

function flacFile (sampleRate: number, totalSamples: number, bodyBytes: number): Buffer {
  const head = Buffer.alloc(8 + 34)
  head.write('fLaC', 0, 'latin1'); head[4] = 0x80; head.writeUIntBE(34, 5, 3)
  const s = 8
  head.writeUInt16BE(4096, s); head.writeUInt16BE(4096, s + 2)
  head[s + 10] = (sampleRate >> 12) & 0xff; head[s + 11] = (sampleRate >> 4) & 0xff
  head[s + 12] = ((sampleRate & 0x0f) << 4) | (1 << 1) // 2 channels, 16 bits
  head[s + 13] = (15 << 4) | Math.floor(totalSamples / 2 ** 32)
  head.writeUInt32BE(totalSamples % 2 ** 32, s + 14)
  return Buffer.concat([head, Buffer.alloc(bodyBytes, 0x55)])
}

t.test('chat completions: max_tokens / max_completion_tokens, capped by the model', async (t) => {
  t.equal(worstCaseUsage(jsonRequest('chat.completions', { model: 'm', max_tokens: 100, messages: [] })).outputTokens, 100)
  t.equal(worstCaseUsage(jsonRequest('chat.completions', { model: 'm', max_completion_tokens: 200 })).outputTokens, 200)
  t.equal(worstCaseUsage(jsonRequest('chat.completions', { model: 'm', max_tokens: 100, max_completion_tokens: 300 })).outputTokens, 300, 'the largest wins')
  t.equal(worstCaseUsage(jsonRequest('chat.completions', { model: 'm', max_tokens: 1_000_000 })).outputTokens, 16384, 'model cap')
  t.equal(worstCaseUsage(jsonRequest('chat.completions', { model: 'm', max_tokens: 100, n: 3 })).outputTokens, 300, 'n choices')
})

t.test('responses, messages and generative-content bodies', async (t) => {
  t.equal(worstCaseUsage(jsonRequest('responses', { model: 'm', input: 'hi', max_output_tokens: 50 })).outputTokens, 50)
  t.equal(worstCaseUsage(jsonRequest('messages', { model: 'm', max_tokens: 1024, messages: [] })).outputTokens, 1024)
  const genai = { contents: [{ parts: [{ text: 'hi' }] }], generationConfig: { maxOutputTokens: 777, candidateCount: 2 } }
  t.equal(worstCaseUsage(jsonRequest('genai.generateContent', genai)).outputTokens, 1554)
  t.equal(worstCaseUsage(jsonRequest('genai.streamGenerateContent', { generation_config: { max_output_tokens: 99 } })).outputTokens, 99)
  t.equal(worstCaseUsage(jsonRequest('genai.generateContent', { generationConfig: { maxOutputTokens: 1e9 } })).outputTokens, 16384)
})

t.test('missing or invalid max tokens fall back to the model, then to 4096', async (t) => {
  t.equal(worstCaseUsage(jsonRequest('chat.completions', { model: 'm' })).outputTokens, 16384)
  t.equal(worstCaseUsage(jsonRequest('chat.completions', { max_tokens: 'lots' })).outputTokens, 16384)
  t.equal(worstCaseUsage(jsonRequest('chat.completions', { max_tokens: -5, n: 0 })).outputTokens, 16384)
  t.equal(worstCaseUsage(jsonRequest('chat.completions', { model: 'm' }, { pricing: TOKEN })).outputTokens, DEFAULT_MAX_OUTPUT_TOKENS)
  t.equal(worstCaseUsage(jsonRequest('chat.completions', { max_tokens: 50000 }, { pricing: TOKEN })).outputTokens, 50000, 'no model cap')
})

t.test('input tokens: one per body byte, at least 1, capped by the context window', async (t) => {
  const body = { model: 'm', messages: [{ role: 'user', content: 'héllo ✓' }] }
  const bytes = Buffer.byteLength(JSON.stringify(body))
  t.equal(worstCaseUsage(jsonRequest('chat.completions', body)).inputTokens, Math.ceil(bytes / BYTES_PER_TOKEN))
  t.equal(worstCaseUsage({ bounds: boundsOf('chat.completions'), model: { pricing: TOKEN }, json: {}, bodyBytes: 7 }).inputTokens, 7)
  t.equal(worstCaseUsage({ bounds: boundsOf('chat.completions'), model: { pricing: TOKEN }, bodyBytes: 0 }).inputTokens, 1)
  t.equal(worstCaseUsage({ bounds: boundsOf('chat.completions'), model: { pricing: TOKEN, contextTokens: 1000 }, bodyBytes: 1_000_000 }).inputTokens, 1000)
  t.throws(() => worstCaseUsage({ bounds: boundsOf('chat.completions'), model: { pricing: TOKEN }, bodyBytes: -1 }), RangeError)
  const u = worstCaseUsage(jsonRequest('chat.completions', body))
  t.same([u.cachedInputTokens, u.calls, u.jobs, u.reported], [0, 1, 1, false])
})

t.test('images: n, parameters.sampleCount, capped at 10', async (t) => {
  const IMG = { pricing: { unit: 'image', unit_price: '0.04' } as PriceConfig }
  t.equal(worstCaseUsage(jsonRequest('images.generations', { model: 'm', prompt: 'a cat' }, IMG)).images, 1)
  t.equal(worstCaseUsage(jsonRequest('images.generations', { model: 'm', prompt: 'a cat', n: 4 }, IMG)).images, 4)
  t.equal(worstCaseUsage(jsonRequest('images.generations', { n: 50 }, IMG)).images, 10)
  t.equal(worstCaseUsage(jsonRequest('genai.generateImages', { instances: [{ prompt: 'x' }], parameters: { sampleCount: 3 } }, IMG)).images, 3)
  const edit: WorstCaseInput = { bounds: boundsOf('images.edits'), model: IMG, multipart: { fields: { n: '2', prompt: 'x' }, files: [] }, bodyBytes: 5000 }
  t.equal(worstCaseUsage(edit).images, 2, 'multipart field')
  const priced = compilePrice(IMG.pricing)
  t.equal(costOf(priced, worstCaseUsage(jsonRequest('images.generations', { n: 3 }, IMG))), 120_000_000n)
  // token prices on an image model: output tokens scale with the number of images
  const tok = worstCaseUsage(jsonRequest('images.generations', { n: 3 }, { pricing: IMG.pricing, maxOutputTokens: 5000 }))
  t.equal(tok.outputTokens, 15000)
})

t.test('speech: characters are code points of input', async (t) => {
  const TTS = { pricing: { unit: 'character', unit_price: '0.000015' } as PriceConfig }
  const u = worstCaseUsage(jsonRequest('audio.speech', { model: 'openai/tts-1', input: 'héllo 👋🏽', voice: 'alloy' }, TTS))
  t.equal(u.characters, 8)
  t.equal(costOf(compilePrice(TTS.pricing), u), 120_000n)
  t.equal(worstCaseUsage({ bounds: boundsOf('audio.speech'), model: TTS, bodyBytes: 321 }).characters, 321, 'no input: body size bound')
})

t.test('WAV: 2.5 s of 16 kHz mono → 2.5 s, held as the whole 3 s a provider may bill', async (t) => {
  const file = wavFile(2.5, 16000)
  t.same(readAudioDuration(file, file.length), { millis: 2500, source: 'wav' })
  const u = worstCaseUsage(upload(file))
  // The hold rounds the bound up to a whole second: providers report audio in whole seconds.
  t.equal(u.audioSeconds, 3)
  t.equal(costOf(compilePrice({ unit: 'audio_second', unit_price: '0.0001' }), u), 300_000n)
  const stereo = wavFile(3, 44100, 2, 100) // LIST chunk before data
  t.same(readAudioDuration(stereo, stereo.length), { millis: 3000, source: 'wav' })
  const big = wavFile(1, 8000, 1, 70_000) // data chunk beyond the 64 KiB head
  t.same(readAudioDuration(big.subarray(0, HEAD), big.length), { millis: big.length, source: 'size-bound' })
  const truncated = wavFile(2, 16000).subarray(0, 44 + 32000) // header says 2 s, 1 s of data present
  t.same(readAudioDuration(truncated, truncated.length), { millis: 1000, source: 'wav' })
})

t.test('MP3: first frame bitrate, size / bitrate', async (t) => {
  const file = mp3File(MPEG1_L3_128K_44K, 40, 90) // 40 × 417 bytes of 128 kbit/s after a 100-byte ID3 tag
  t.same(readAudioDuration(file.subarray(0, HEAD), file.length), { millis: Math.ceil(40 * 417 * 8 / 128), source: 'mp3' })
  const low = mp3File(MPEG2_L3_16K_16K_MONO, 500) // 36000 bytes at 16 kbit/s = 18 s
  t.same(readAudioDuration(low, low.length), { millis: 18000, source: 'mp3' })
  t.equal(worstCaseUsage(upload(low, 'audio.transcriptions', 'audio/mpeg')).audioSeconds, 18)
  const xing = mp3File(MPEG1_L3_128K_44K, 10, 0, (f) => { f.write('Xing', 36, 'latin1'); f.writeUInt32BE(1, 40); f.writeUInt32BE(1000, 44) })
  t.same(readAudioDuration(xing, xing.length), { millis: Math.ceil(1000 * 1152 * 1000 / 44100), source: 'mp3' }, 'VBR frame count')
})

t.test('FLAC: STREAMINFO total samples / sample rate', async (t) => {
  const file = flacFile(44100, 441000, 1000)
  t.same(readAudioDuration(file, file.length), { millis: 10000, source: 'flac' })
})

t.test('unreadable files are bounded at 8 kbit/s (size / 1000 s)', async (t) => {
  const noise = Buffer.alloc(50_000)
  for (let i = 0; i < noise.length; i++) noise[i] = (i * 7919 + 13) % 251
  t.same(readAudioDuration(noise.subarray(0, HEAD), noise.length), { millis: 50_000, source: 'size-bound' })
  const ogg = Buffer.concat([Buffer.from('OggS'), mp3File(MPEG1_L3_128K_44K, 3)])
  t.equal(readAudioDuration(ogg, ogg.length).source, 'size-bound', 'a frame sync inside another container is ignored')
  t.equal(worstCaseUsage(upload(noise, 'audio.transcriptions', 'audio/ogg')).audioSeconds, 50)
  const two: WorstCaseInput = { ...upload(noise), multipart: { fields: {}, files: [{ field: 'file', size: 2000, head: Buffer.alloc(0), mimeType: 'x' }, { field: 'file2', size: 500, head: Buffer.alloc(0), mimeType: 'x' }] } }
  t.equal(worstCaseUsage(two).audioSeconds, 3, 'files add up (each rounded up to a whole second)')
  t.equal(worstCaseUsage({ bounds: boundsOf('audio.transcriptions'), model: upload(noise).model, bodyBytes: 1234 }).audioSeconds, 1.234, 'no file: body size')
})

// Property: for any price list and request, no usage within the request's declared limits costs more than the hold.
const nanos = fc.bigInt({ min: 0n, max: 10n ** 11n })
const decimal = (v: bigint): string => `${v / 1_000_000_000n}.${(v % 1_000_000_000n).toString().padStart(9, '0')}`
const money = nanos.map(decimal)
const arbPrice: fc.Arbitrary<PriceConfig> = fc.oneof(
  fc.tuple(nanos, nanos, money, fc.integer({ min: 1, max: 1_000_000 })).map(([a, b, output, per]): PriceConfig => {
    const [cached, input] = a < b ? [a, b] : [b, a]
    return { unit: 'token', input: decimal(input), cached_input: decimal(cached), output, per }
  }),
  fc.tuple(money, fc.option(money, { nil: undefined }), fc.integer({ min: 1, max: 1000 })).map(([u, tok, per]): PriceConfig =>
    tok === undefined ? { unit: 'image', unit_price: u, per } : { unit: 'image', unit_price: u, input: tok, output: tok, per }),
  fc.record({ unit: fc.constantFrom('audio_second' as const, 'character' as const, 'call' as const, 'job' as const), unit_price: money })
)
const OPERATIONS = ['chat.completions', 'responses', 'messages', 'genai.generateContent', 'images.generations', 'genai.generateImages', 'audio.speech', 'audio.transcriptions', 'videos.create']

t.test('property: worst-case cost ≥ actual cost for any usage within the declared limits', async () => {
  fc.assert(fc.property(
    arbPrice, fc.constantFrom(...OPERATIONS),
    fc.option(fc.integer({ min: 1, max: 200_000 }), { nil: undefined }), fc.option(fc.integer({ min: 1, max: 100_000 }), { nil: undefined }),
    fc.option(fc.integer({ min: 1, max: 20 }), { nil: undefined }), fc.string({ unit: 'grapheme', maxLength: 200 }),
    fc.option(fc.integer({ min: 100, max: 100_000 }), { nil: undefined }), fc.integer({ min: 0, max: 300_000 }),
    fc.record({ input: fc.double({ min: 0, max: 1, noNaN: true }), cached: fc.double({ min: 0, max: 1, noNaN: true }), output: fc.double({ min: 0, max: 1, noNaN: true }), images: fc.double({ min: 0, max: 1, noNaN: true }), seconds: fc.double({ min: 0, max: 1, noNaN: true }), chars: fc.double({ min: 0, max: 1, noNaN: true }) }),
    (pricing, operation, maxTokens, modelMax, n, text, context, audioBytes, share) => {
      const { bounds } = opOf(operation)
      const body: Record<string, unknown> = { model: 'm', input: text }
      // Each limit goes where the operation reads it (chat max_tokens, genai generationConfig.maxOutputTokens, ...).
      const put = (path: ParamPath | undefined, value: number | undefined): void => {
        if (path === undefined || value === undefined) return
        let at = body
        for (const key of path.keys.slice(0, -1)) at = (at[key] ??= {}) as Record<string, unknown>
        at[path.keys[path.keys.length - 1] ?? ''] = value
      }
      put(bounds.maxTokens[0], maxTokens)
      put(bounds.count[0], n)
      const model = { pricing, ...(modelMax === undefined ? {} : { maxOutputTokens: modelMax }), ...(context === undefined ? {} : { contextTokens: context }) }
      const audio = mp3File(MPEG2_L3_16K_16K_MONO, Math.ceil(audioBytes / 72) + 2)
      const req: WorstCaseInput = { bounds, model, json: body, bodyBytes: Buffer.byteLength(JSON.stringify(body)) + audio.length, multipart: { fields: {}, files: [{ field: 'file', size: audio.length, head: audio.subarray(0, HEAD), mimeType: 'audio/mpeg' }] } }
      // The request's declared limits, computed independently of worstCaseUsage.
      const perGeneration = maxTokens === undefined || bounds.maxTokens.length === 0 ? (modelMax ?? 4096) : Math.min(maxTokens, modelMax ?? Infinity)
      const asked = bounds.count.length > 0 ? (n ?? 1) : 1
      const images = Math.min(asked, 10)
      const generations = bounds.countIsImages ? images : asked
      const inputLimit = Math.min(Math.max(1, Math.ceil(req.bodyBytes / BYTES_PER_TOKEN)), context ?? Infinity)
      const audioMillis = Math.ceil(audio.length * 8 / 16)
      const input = Math.floor(share.input * inputLimit)
      const actual: Usage = {
        inputTokens: input,
        cachedInputTokens: Math.floor(share.cached * input),
        outputTokens: Math.floor(share.output * perGeneration * generations),
        images: Math.floor(share.images * images),
        audioSeconds: Math.floor(share.seconds * audioMillis) / 1000,
        characters: Math.floor(share.chars * [...text].length),
        calls: 1,
        jobs: 1,
        reported: true
      }
      const price = compilePrice(pricing)
      return costOf(price, worstCaseUsage(req)) >= costOf(price, actual)
    }), { numRuns: 400 })
})
