// Endpoints / billing units: every unit the catalogue prices, called through the official SDK
// of its family. For each request the wallet goes down by exactly the cost this test computes
// from the YAML prices (exact bigint, rounded up once per request), and the request log row
// holds the units, that cost, BILLED, the model that answered, and whether the usage was
// reported by the provider or estimated by the gateway. Hostile usage reports are never
// believed: the balance never goes up. A believable report above the hold is posted in full.
import { readFileSync } from 'node:fs'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import { Anthropic } from '@anthropic-ai/sdk'
import { GoogleGenAI } from '@google/genai'
import { OpenAI, toFile } from 'openai'
import t, { type Test } from 'tap'
import { parse } from 'yaml'
import { replyChunks, type RecordedCall } from './fixtures/mock-upstream.js'
import { PNG_BYTES } from './fixtures/mock-upstream/media.js'
import { estimateUsage } from '../plugins/concerns/metering/estimate.js'
import type { RequestLogRow, RequestUsage } from '../plugins/foundation/store/request-log/types.js'
import { capturingFetch, type CapturingFetch } from './helpers/capture-fetch.js'
import { startTestGateway, type TestGateway } from './helpers/gateway.js'
import {
  ceilDiv, codePoints, expectedCost, ledgerState, nanos, priceOf, settledRow, tokensFromChars, type TestPrice, type Units
} from './helpers/billing.js'
import { modelOf, providerOf, writeTestConfig, type RawConfig } from './helpers/test-config.js'
import { wavFile } from './helpers/wire.js'

const gw = await startTestGateway({ credit: '100.00' })
t.teardown(() => gw.close())
t.beforeEach(() => gw.mock.reset())

interface Clients { cap: CapturingFetch, openai: OpenAI, anthropic: Anthropic, genai: GoogleGenAI }

function clientsFor (g: TestGateway): Clients {
  const cap = capturingFetch()
  return {
    cap,
    openai: new OpenAI({ baseURL: `${g.url}/v1`, apiKey: g.key, maxRetries: 0, fetch: cap.fetch }),
    anthropic: new Anthropic({ baseURL: g.url, apiKey: g.key, maxRetries: 0, fetch: cap.fetch }),
    genai: new GoogleGenAI({
      apiKey: g.key,
      httpOptions: { baseUrl: `${g.url}/genai`, headers: { 'x-genai-api-key': g.key }, retryOptions: { attempts: 1 }, fetch: cap.fetch }
    })
  }
}

const { cap, openai, anthropic, genai } = clientsFor(gw)

function onlyCall (g: TestGateway = gw): RecordedCall {
  const [call, ...rest] = g.mock.calls
  if (call === undefined || rest.length > 0) throw new Error(`expected one upstream call, got ${g.mock.calls.length}`)
  return call
}

async function balance (g: TestGateway = gw): Promise<bigint> {
  return (await g.services.store.ledger.wallet(g.account.id)).balance
}

interface Expect {
  model: string
  /** The billed units as this test counts them. */
  units: Units
  reported: boolean
  /** Default: priced from gateway.yaml. */
  price?: TestPrice
  /** Row usage fields to check besides the token counts (audio seconds, characters...). */
  usage?: Partial<RequestUsage>
}

/**
 * The last request through `c` was billed exactly: wallet − cost, one charge entry of that
 * cost on the request's hold, and a row that says so.
 */
async function expectBilled (t: Test, before: bigint, e: Expect, c: Clients = { cap, openai, anthropic, genai }, g: TestGateway = gw): Promise<RequestLogRow> {
  const response = c.cap.last().response
  const requestId = response?.headers.get('x-request-id') ?? ''
  t.equal(response?.headers.get('x-gateway-model'), e.model, 'X-Gateway-Model names the model that answered')
  const row = await settledRow(g, requestId)
  const cost = expectedCost(e.price ?? priceOf(e.model), e.units)
  t.ok(cost > 0n, `expected cost ${cost} nano-units`)
  t.equal(before - await balance(g), cost, `the wallet went down by exactly ${cost} nano-units`)
  t.equal(row.cost, cost, 'row: cost')
  t.equal(row.billingStatus, 'BILLED', 'row: BILLED')
  t.equal(row.answeredModel, e.model, 'row: answered model')
  t.equal(row.requestedModel, e.model, 'row: requested model')
  t.equal(row.usageReported, e.reported, `row: usage ${e.reported ? 'reported by the provider' : 'estimated by the gateway'}`)
  t.equal(row.status, 200, 'row: status 200')
  t.ok(row.held !== null && row.cost !== null && row.cost <= row.held, 'row: cost ≤ hold')
  t.match(row.usage, {
    inputTokens: e.units.inputTokens ?? Number,
    outputTokens: e.units.outputTokens ?? Number,
    cachedInputTokens: e.units.cachedInputTokens ?? Number,
    ...(e.units.images === undefined ? {} : { images: e.units.images }),
    ...(e.units.calls === undefined ? {} : { calls: e.units.calls }),
    ...(e.units.characters === undefined ? {} : { characters: e.units.characters }),
    ...(e.units.audioMillis === undefined ? {} : { audioSeconds: e.units.audioMillis / 1000 }),
    ...(e.usage ?? {})
  }, 'row: units')
  const ledger = await ledgerState(g)
  const charge = ledger.charges.find((x) => x.holdId === row.holdId)
  t.equal(charge?.amount, -cost, 'ledger: one charge of the cost on the request\'s hold')
  t.equal(charge?.postingId, row.postingId, 'ledger: the row names the posting')
  t.equal(charge?.requestId, requestId, 'ledger: the charge names the request')
  t.equal(ledger.openHolds, 0, 'ledger: no open hold')
  t.equal(ledger.entriesSum, ledger.balance, 'ledger: entries sum to the balance')
  return row
}

/** Prompt tokens as the mock counts them: ceil(chars / 4). */
const promptTokens = (text: string): number => tokensFromChars(codePoints(text))

/** The gateway's estimate of the input of the request the SDK just sent (plugins/concerns/metering/estimate.ts). */
const estimatedInput = (dialect: 'chat' | 'messages', upstreamModel: string): number =>
  estimateUsage(dialect, { json: JSON.parse(cap.last().body.toString('utf8')) as Record<string, unknown> }, { upstreamModel }, 0).inputTokens

t.test('per input/output token', async (t) => {
  t.test('chat completions JSON (reported)', async (t) => {
    const before = await balance()
    const prompt = 'Count the tokens of this chat, please'
    const r = await openai.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: prompt }] }, { headers: { 'x-mock-chunks': '9' } })
    t.equal(r.usage?.completion_tokens, 9, 'the provider reported 9 output tokens')
    t.same(onlyCall().reported, { inputTokens: promptTokens(prompt), outputTokens: 9 }, 'the provider reported its usage')
    await expectBilled(t, before, { model: 'openai/gpt-4o-mini', units: { inputTokens: promptTokens(prompt), outputTokens: 9, cachedInputTokens: 0 }, reported: true })
  })

  t.test('chat completions stream without include_usage (the gateway asks for it and bills it)', async (t) => {
    const before = await balance()
    const prompt = 'stream me a dozen words'
    const stream = await openai.chat.completions.create({ model: 'openai/gpt-4o', stream: true, messages: [{ role: 'user', content: prompt }] }, { headers: { 'x-mock-chunks': '12' } })
    let text = ''
    let sawUsage = false
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? ''
      if (chunk.usage) sawUsage = true
    }
    t.equal(text, replyChunks(prompt, 12).join(''))
    t.notOk(sawUsage, 'the client did not ask for the usage chunk and did not get it')
    await expectBilled(t, before, { model: 'openai/gpt-4o', units: { inputTokens: promptTokens(prompt), outputTokens: 12, cachedInputTokens: 0 }, reported: true })
  })

  t.test('responses', async (t) => {
    const before = await balance()
    const input = 'Respond with some words about billing'
    const r = await openai.responses.create({ model: 'openai/gpt-4o', input }, { headers: { 'x-mock-chunks': '6' } })
    t.equal(r.usage?.output_tokens, 6, 'the provider reported 6 output tokens')
    await expectBilled(t, before, { model: 'openai/gpt-4o', units: { inputTokens: promptTokens(input), outputTokens: 6, cachedInputTokens: 0 }, reported: true })
  })

  t.test('messages JSON', async (t) => {
    const before = await balance()
    const prompt = 'Hello Claude, how much is this?'
    const r = await anthropic.messages.create({ model: 'anthropic/claude-sonnet-4', max_tokens: 100, messages: [{ role: 'user', content: prompt }] }, { headers: { 'x-mock-chunks': '8' } })
    t.equal(r.usage.output_tokens, 8, 'the provider reported 8 output tokens')
    await expectBilled(t, before, { model: 'anthropic/claude-sonnet-4', units: { inputTokens: promptTokens(prompt), outputTokens: 8, cachedInputTokens: 0 }, reported: true })
  })

  t.test('messages stream', async (t) => {
    const before = await balance()
    const prompt = 'stream from the messages family'
    const final = await anthropic.messages.stream({ model: 'anthropic/claude-haiku-3.5', max_tokens: 100, messages: [{ role: 'user', content: prompt }] }, { headers: { 'x-mock-chunks': '11' } }).finalMessage()
    t.equal(final.usage.output_tokens, 11, 'the provider reported 11 output tokens')
    await expectBilled(t, before, { model: 'anthropic/claude-haiku-3.5', units: { inputTokens: promptTokens(prompt), outputTokens: 11, cachedInputTokens: 0 }, reported: true })
  })

  t.test('generateContent', async (t) => {
    const before = await balance()
    const prompt = 'Hello Gemini, bill me by the token'
    const r = await genai.models.generateContent({ model: 'genai/gemini-2.5-flash', contents: prompt, config: { httpOptions: { headers: { 'x-mock-chunks': '7' } } } })
    t.equal(r.usageMetadata?.candidatesTokenCount, 7, 'the provider reported 7 output tokens')
    await expectBilled(t, before, { model: 'genai/gemini-2.5-flash', units: { inputTokens: promptTokens(prompt), outputTokens: 7, cachedInputTokens: 0 }, reported: true })
  })

  t.test('streamGenerateContent', async (t) => {
    const before = await balance()
    const prompt = 'stream it from the generative family'
    const stream = await genai.models.generateContentStream({ model: 'genai/gemini-2.5-flash', contents: prompt, config: { httpOptions: { headers: { 'x-mock-chunks': '5' } } } })
    let text = ''
    for await (const chunk of stream) text += chunk.text ?? ''
    t.equal(text, replyChunks(prompt, 5).join(''))
    await expectBilled(t, before, { model: 'genai/gemini-2.5-flash', units: { inputTokens: promptTokens(prompt), outputTokens: 5, cachedInputTokens: 0 }, reported: true })
  })
})

/**
 * The mock never reports cached tokens, so a provider that does: a chat completion with 1,000 of
 * 1,200 prompt tokens from the cache, and a message whose input has 1,000 cache reads and 50
 * cache writes next to 200 plain tokens. With `x-over-report` the chat completion reports a
 * believable but huge output count instead.
 */
async function cachingProvider (): Promise<{ url: string, close: () => Promise<void> }> {
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let raw = ''
    req.on('data', (c: Buffer) => { raw += c.toString('utf8') })
    req.on('end', () => {
      const body = JSON.parse(raw) as { model: string }
      const reply = req.url === '/v1/messages'
        ? {
            id: 'msg_cached',
            type: 'message',
            role: 'assistant',
            model: body.model,
            content: [{ type: 'text', text: 'from the cache' }],
            stop_reason: 'end_turn',
            stop_sequence: null,
            usage: { input_tokens: 200, cache_read_input_tokens: 1000, cache_creation_input_tokens: 50, output_tokens: 30 }
          }
        : {
            id: 'chatcmpl-cached',
            object: 'chat.completion',
            created: 1,
            model: body.model,
            choices: [{ index: 0, message: { role: 'assistant', content: 'from the cache' }, finish_reason: 'stop', logprobs: null }],
            usage: req.headers['x-over-report'] === undefined
              ? { prompt_tokens: 1200, completion_tokens: 30, total_tokens: 1230, prompt_tokens_details: { cached_tokens: 1000 } }
              // Believable numbers (under the gateway's sanity limit), far beyond what was held.
              : { prompt_tokens: 12, completion_tokens: 900_000_000, total_tokens: 900_000_012 }
          }
      const bytes = Buffer.from(JSON.stringify(reply))
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': bytes.length })
      res.end(bytes)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const address = server.address()
  if (address === null || typeof address === 'string') throw new Error('no port')
  return { url: `http://127.0.0.1:${address.port}`, close: async () => { server.closeAllConnections(); await new Promise((resolve) => server.close(resolve)) } }
}

t.test('cached input tokens are billed at the cached price', async (t) => {
  const provider = await cachingProvider()
  t.teardown(provider.close)
  const g = await startTestGateway({ credit: '10.00', env: { OPENAI_BASE_URL: provider.url, ANTHROPIC_BASE_URL: provider.url } })
  t.teardown(() => g.close())
  const c = clientsFor(g)

  t.test('chat completions: prompt_tokens_details.cached_tokens', async (t) => {
    const before = await balance(g)
    await c.openai.chat.completions.create({ model: 'openai/gpt-4o', messages: [{ role: 'user', content: 'cached?' }] })
    const price = priceOf('openai/gpt-4o')
    t.ok(price.cachedInput !== undefined && price.cachedInput < (price.input ?? 0n), 'gpt-4o has a cheaper cached price')
    await expectBilled(t, before, { model: 'openai/gpt-4o', units: { inputTokens: 1200, cachedInputTokens: 1000, outputTokens: 30 }, reported: true }, c, g)
  })

  t.test('messages: cache reads at the cached price, cache writes at the cache-write price', async (t) => {
    const before = await balance(g)
    await c.anthropic.messages.create({ model: 'anthropic/claude-sonnet-4', max_tokens: 100, messages: [{ role: 'user', content: 'cached?' }] })
    // 200 plain input tokens at $3, 1,000 cache reads at $0.30, 50 cache writes without a split (the
    // default 5-minute lifetime) at $3.75, 30 output tokens at $15, per 1M.
    const cost = (200n * 3000n) + (1000n * 300n) + (50n * 3750n) + (30n * 15000n)
    t.equal(before - await balance(g), cost, 'the wallet went down by the four parts at their rates')
  })
})

t.test('a believable report above the hold is posted down to the bound, the excess above the hold marked as overage, the rest unrecovered', async (t) => {
  const provider = await cachingProvider()
  t.teardown(provider.close)
  // The provider's over-report switch is a request header: allowed upstream for this test only.
  const cfg = writeTestConfig((c) => { providerOf(c, 'openai').allow_request_headers = ['accept', 'x-over-report'] })
  t.teardown(cfg.remove)
  const g = await startTestGateway({ configFile: cfg.file, credit: '10.00', env: { OPENAI_BASE_URL: provider.url } })
  t.teardown(() => g.close())
  const c = clientsFor(g)
  const before = await balance(g)
  const r = await c.openai.chat.completions.create({ model: 'openai/gpt-4o', max_tokens: 100, messages: [{ role: 'user', content: 'over-report' }] }, { headers: { 'x-over-report': '1' } })
  t.equal(r.usage?.completion_tokens, 900_000_000, 'the provider reported 900M output tokens for a request held for 100')
  const row = await settledRow(g, c.cap.last().response?.headers.get('x-request-id') ?? '')
  const price = priceOf('openai/gpt-4o')
  const full = expectedCost(price, { inputTokens: 12, outputTokens: 900_000_000 })
  t.ok(row.held !== null && row.held < full, `held ${String(row.held)} < reported cost ${full}`)
  t.ok(full > before, 'the reported cost is above the whole wallet')
  t.equal(row.cost, before, 'the whole wallet is charged, down to the floor of 0, not capped at the hold')
  t.equal(row.overage, before - (row.held ?? 0n), 'the row marks the posted part above the hold')
  t.equal(row.unrecovered, full - before, 'and the part beyond the floor as unrecovered')
  t.equal(await balance(g), 0n, 'the wallet stops at its floor of 0')
  t.equal(row.usageReported, true, 'the numbers were believable, so reported')
  t.equal(row.billingStatus, 'BILLED')
  const ledger = await ledgerState(g)
  t.equal(ledger.charged, before, 'one charge of what the wallet had')
  t.equal(ledger.charges.length, 1)
  t.equal(ledger.charges[0]?.overage, before - (row.held ?? 0n), 'the charge entry marks the same overage')
  t.equal(ledger.charges[0]?.unrecovered, full - before, 'and the same unrecovered part')
  t.equal(ledger.openHolds, 0, 'no open hold')
  t.equal(ledger.entriesSum, ledger.balance, 'entries sum to the balance')
})

t.test('per image: n = 3 bills 3 images', async (t) => {
  const before = await balance()
  const r = await openai.images.generate({ model: 'openai/gpt-image-1', prompt: 'three blue circles', n: 3 })
  t.equal(r.data?.length, 3, 'three images came back')
  t.equal(onlyCall().produced?.images, 3, 'the provider generated three')
  // `auto` quality and size, rendered (the answer says) at medium 1024x1024: 0.042 an image, and
  // the prompt's text tokens at $5 / 1M (the image's output tokens are what the per-image price is).
  const row = await expectBilled(t, before, { model: 'openai/gpt-image-1', units: { images: 3, imageTier: { quality: 'medium', size: '1024x1024' }, inputTokens: promptTokens('three blue circles'), outputTokens: 3 * 1056 }, reported: true })
  t.equal(row.cost, 3n * nanos('0.042') + BigInt(promptTokens('three blue circles')) * 5000n, '3 × 0.042 and the prompt')
})

/** 8 kHz, 8-bit mono: 8,000 bytes per second, so 7 s is exactly 56,000 samples. */
const SEVEN_SECONDS = wavFile(7 * 8000)

t.test('per second of input audio: whisper-1 transcription of a 7 s WAV', async (t) => {
  const before = await balance()
  const r = await openai.audio.transcriptions.create({ model: 'openai/whisper-1', file: await toFile(SEVEN_SECONDS, 'seven.wav', { type: 'audio/wav' }) })
  t.same(r.usage, { type: 'duration', seconds: 7 })
  const row = await expectBilled(t, before, { model: 'openai/whisper-1', units: { audioMillis: 7000 }, reported: true })
  t.equal(row.cost, 7n * nanos('0.0001'), '7 s × 0.0001')
})

t.test('token-billed transcription: gpt-4o-mini-transcribe', async (t) => {
  const before = await balance()
  await openai.audio.transcriptions.create({ model: 'openai/gpt-4o-mini-transcribe', file: await toFile(SEVEN_SECONDS, 'seven.wav', { type: 'audio/wav' }) })
  const reported = onlyCall().reported
  // The mock counts 10 audio tokens a second and one output token per word (5 by default).
  t.same(reported, { inputTokens: 70, outputTokens: 5 }, 'the provider reported 70 input and 5 output tokens')
  await expectBilled(t, before, { model: 'openai/gpt-4o-mini-transcribe', units: { inputTokens: 70, outputTokens: 5, cachedInputTokens: 0 }, reported: true })
})

t.test('per input character: tts-1 counts code points', async (t) => {
  const before = await balance()
  const input = 'Read this: naïve café 👋🏽 — 𝄞 and 漢字!'
  t.not(codePoints(input), input.length, 'the text has characters outside the BMP')
  const res = await openai.audio.speech.create({ model: 'openai/tts-1', input, voice: 'alloy' })
  t.ok((await res.arrayBuffer()).byteLength > 0, 'audio bytes came back')
  const row = await expectBilled(t, before, { model: 'openai/tts-1', units: { characters: codePoints(input) }, reported: true })
  t.equal(row.cost, BigInt(codePoints(input)) * nanos('0.000015'), `${codePoints(input)} code points × 0.000015`)
})

t.test('per output token, token-billed speech: gpt-4o-mini-tts is estimated from the audio', async (t) => {
  const before = await balance()
  const input = 'Speak these words with feeling'
  const res = await openai.audio.speech.create({ model: 'openai/gpt-4o-mini-tts', input, voice: 'alloy' })
  const bytes = (await res.arrayBuffer()).byteLength
  t.equal(res.headers.get('content-type'), 'audio/mpeg', 'mp3 audio')
  // A binary answer reports no usage. The gateway's documented estimate (plugins/concerns/metering/
  // audio-meters.ts): mp3 at 16,000 bytes a second, 1,250 output tokens a minute; the input
  // from the text at four characters a token.
  const outputTokens = ceilDiv(bytes * 1250, 16_000 * 60)
  t.ok(outputTokens > 0, `${bytes} audio bytes → ${outputTokens} output tokens`)
  await expectBilled(t, before, { model: 'openai/gpt-4o-mini-tts', units: { inputTokens: promptTokens(input), outputTokens, cachedInputTokens: 0 }, reported: false })
})

t.test('per image: image edits', async (t) => {
  const before = await balance()
  const r = await openai.images.edit({ model: 'openai/gpt-image-1-edit', prompt: 'make it blue', image: await toFile(PNG_BYTES, 'in.png', { type: 'image/png' }) })
  t.equal(r.data?.length, 1, 'one edited image')
  const row = await expectBilled(t, before, { model: 'openai/gpt-image-1-edit', units: { images: 1, imageTier: { quality: 'medium', size: '1024x1024' } }, reported: true })
  t.equal(row.cost, nanos('0.042'), 'one medium 1024x1024 image (auto, as the answer says it rendered)')
})

t.test('reported vs estimated: x-mock-usage none bills the estimate and says so', async (t) => {
  const before = await balance()
  const prompt = 'no usage will be reported for this one'
  const r = await openai.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: prompt }] }, { headers: { 'x-mock-usage': 'none', 'x-mock-chunks': '10' } })
  t.equal(r.usage, undefined, 'the provider reported nothing')
  const reply = r.choices[0]?.message.content ?? ''
  t.equal(reply, replyChunks(prompt, 10).join(''), 'the reply text')
  // The estimate: the request as gpt-4o-mini's tokenizer counts it (with its framing), and one
  // token per UTF-8 byte of the generated text.
  await expectBilled(t, before, { model: 'openai/gpt-4o-mini', units: { inputTokens: estimatedInput('chat', 'gpt-4o-mini'), outputTokens: Buffer.byteLength(reply), cachedInputTokens: 0 }, reported: false })
})

t.test('hostile usage reports are never believed', async (t) => {
  for (const mode of ['negative', 'absurd'] as const) {
    t.test(`chat JSON, x-mock-usage: ${mode}`, async (t) => {
      const before = await balance()
      const prompt = `a provider that reports ${mode} usage`
      const r = await openai.chat.completions.create({ model: 'openai/gpt-4o', messages: [{ role: 'user', content: prompt }] }, { headers: { 'x-mock-usage': mode } })
      const reported = r.usage?.completion_tokens ?? 0
      t.ok(mode === 'negative' ? reported < 0 : reported >= 1e15, `the provider reported ${reported} output tokens`)
      const reply = r.choices[0]?.message.content ?? ''
      const row = await expectBilled(t, before, { model: 'openai/gpt-4o', units: { inputTokens: estimatedInput('chat', 'gpt-4o'), outputTokens: Buffer.byteLength(reply), cachedInputTokens: 0 }, reported: false })
      t.ok(await balance() < before, 'the balance did not go up')
      t.ok(row.cost !== null && row.held !== null && row.cost <= row.held, 'charge ≤ hold')
    })

    t.test(`messages stream, x-mock-usage: ${mode}`, async (t) => {
      const before = await balance()
      const prompt = `a stream that reports ${mode} usage`
      const stream = anthropic.messages.stream({ model: 'anthropic/claude-sonnet-4', max_tokens: 50, messages: [{ role: 'user', content: prompt }] }, { headers: { 'x-mock-usage': mode } })
      let text = ''
      for await (const e of stream) if (e.type === 'content_block_delta' && e.delta.type === 'text_delta') text += e.delta.text
      const row = await settledRow(gw, cap.last().response?.headers.get('x-request-id') ?? '')
      t.equal(row.usageReported, false, 'usage marked estimated')
      t.equal(row.usage?.outputTokens, Buffer.byteLength(text), 'output estimated from the streamed text, one token per byte')
      t.equal(row.usage?.inputTokens, estimatedInput('messages', 'claude-sonnet-4-20250514'), 'input estimated from the request, one token per byte')
      t.ok(row.cost !== null && row.held !== null && row.cost > 0n && row.cost <= row.held, 'a positive charge ≤ hold')
      t.equal(before - await balance(), row.cost, 'the wallet went down by the row\'s cost')
    })

    t.test(`transcription, x-mock-usage: ${mode}`, async (t) => {
      const before = await balance()
      const r = await openai.audio.transcriptions.create({ model: 'openai/whisper-1', file: await toFile(SEVEN_SECONDS, 'seven.wav', { type: 'audio/wav' }) }, { headers: { 'x-mock-usage': mode } })
      t.match(r.usage, { type: 'duration' })
      // The reported seconds are refused; the upload's own 7 s (read from its header) is billed.
      const row = await expectBilled(t, before, { model: 'openai/whisper-1', units: { audioMillis: 7000 }, reported: false })
      t.ok(row.cost !== null && row.held !== null && row.cost <= row.held, 'charge ≤ hold')
    })
  }
})

t.test('rounding: the exact total of a request is rounded up once, not per line item', async (t) => {
  // 1 nano-unit per 3 input tokens, 2 per 3 output tokens: every line item is a fraction.
  const cfg = writeTestConfig((c) => {
    modelOf(c, 'openai/gpt-4o-mini').pricing = { unit: 'token', input: '0.000000001', output: '0.000000002', per: 3 }
  })
  t.teardown(cfg.remove)
  const g = await startTestGateway({ configFile: cfg.file, credit: '1.00' })
  t.teardown(() => g.close())
  const c = clientsFor(g)
  const prompt = 'abcdefghijklmnopqrstuvwxyz0123456789abcd' // 40 characters: 10 tokens
  const before = await balance(g)
  await c.openai.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: prompt }] }, { headers: { 'x-mock-chunks': '5' } })
  const price = { unit: 'token', per: 3n, input: 1n, output: 2n }
  t.same(priceOf('openai/gpt-4o-mini', parse(readFileSync(cfg.file, 'utf8')) as RawConfig), price, 'the test config prices')
  // (10 × 1 + 5 × 2) / 3 = 20/3 → 7; rounding each line item up would give 4 + 4 = 8.
  const row = await expectBilled(t, before, { model: 'openai/gpt-4o-mini', price, units: { inputTokens: 10, outputTokens: 5, cachedInputTokens: 0 }, reported: true }, c, g)
  t.equal(row.cost, 7n, '20/3 nano-units rounded up once = 7')
})
