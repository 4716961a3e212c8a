// Provider-priced features of issue 25, which were forwarded unpriced (one case held 0.000046 and
// charged 0.000005 while the provider billed a tool call): Responses `image_generation`,
// `web_search`, `code_interpreter`, `mcp` with a tenant-chosen server_url; Messages
// `web_search_20250305` with max_uses 20; chat `service_tier: "priority"`. Each is now priced
// and billed from the use the provider reports, or refused with MODEL_PARAMETER_UNSUPPORTED
// naming the field before anything is held. On both stores, the official SDKs as clients.
import Anthropic from '@anthropic-ai/sdk'
import { GoogleGenAI } from '@google/genai'
import { OpenAI } from 'openai'
import t, { type Test } from 'tap'
import type { RequestLogRow } from '../plugins/foundation/store/request-log/types.js'
import { expectedCost, ledgerState, nanos, priceOf, settledRow, type TestPrice } from './helpers/billing.js'
import { capturingFetch } from './helpers/capture-fetch.js'
import { startTestGateway, type Backend, type TestGateway } from './helpers/gateway.js'
import { modelOf, readRepoConfig, writeTestConfig } from './helpers/test-config.js'
import { checkBounded, refusalCode } from './helpers/wallet-bound.js'

const config = readRepoConfig()
/** A feature's price as gateway.yaml writes it (per_call, per_use or multiplier), in nano-units. */
function featurePrice (model: string, feature: string): bigint {
  const entry = modelOf(config, model).pricing?.features?.[feature]
  const raw = typeof entry === 'object' ? entry.per_call ?? entry.per_use ?? entry.multiplier : undefined
  if (raw === undefined) throw new Error(`${model} prices no ${feature}`)
  return nanos(raw)
}
const contextOf = (model: string): number => Number(modelOf(config, model).context_window)

/** Token cost times a multiplier (nano-units per unit), rounded up once, as the gateway must. */
function tokensTimes (price: TestPrice, u: { inputTokens: number, outputTokens: number }, factor: bigint): bigint {
  const num = (BigInt(u.inputTokens) * (price.input ?? 0n) + BigInt(u.outputTokens) * (price.output ?? 0n)) * factor
  const den = price.per * 1_000_000_000n
  return (num + den - 1n) / den
}

interface Ctx { gw: TestGateway, cap: ReturnType<typeof capturingFetch>, openai: OpenAI, anthropic: Anthropic, genai: GoogleGenAI }

async function start (t: Test, backend: Backend, configFile?: string): Promise<Ctx> {
  const gw = await startTestGateway({ backend, ...(configFile === undefined ? {} : { configFile }) })
  t.teardown(() => gw.close())
  const cap = capturingFetch()
  return {
    gw,
    cap,
    openai: new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: gw.key, maxRetries: 0, fetch: cap.fetch }),
    anthropic: new Anthropic({ baseURL: gw.url, apiKey: gw.key, maxRetries: 0, fetch: cap.fetch }),
    genai: new GoogleGenAI({ apiKey: gw.key, httpOptions: { baseUrl: `${gw.url}/genai`, headers: { 'x-genai-api-key': gw.key }, retryOptions: { attempts: 1 }, fetch: cap.fetch } })
  }
}

async function lastRow (c: Ctx): Promise<RequestLogRow> {
  return await settledRow(c.gw, c.cap.last().response?.headers.get('x-request-id') ?? '')
}

/** A refusal before the hold: the code, the param, nothing forwarded, nothing held or billed. */
async function expectRefused (t: Test, c: Ctx, call: () => Promise<unknown>, param: string): Promise<void> {
  const calls = c.gw.mock.calls.length
  const before = await ledgerState(c.gw)
  const err = await call().then(() => null, (e: unknown) => e)
  t.equal(refusalCode(err), 'MODEL_PARAMETER_UNSUPPORTED', 'refused with MODEL_PARAMETER_UNSUPPORTED')
  const body = c.cap.last().response
  t.equal(body?.headers.get('x-gateway-error-code'), 'MODEL_PARAMETER_UNSUPPORTED')
  t.equal(body?.headers.get('x-gateway-billed'), 'false')
  t.match(err, { error: { param } }, `naming ${param}`)
  t.equal(c.gw.mock.calls.length, calls, 'not forwarded')
  const after = await ledgerState(c.gw)
  t.equal(after.entries.length, before.entries.length, 'nothing billed')
  t.equal(after.openHolds, 0, 'nothing held')
}

const GPT4O = 'openai/gpt-4o'
const SONNET = 'anthropic/claude-sonnet-4'
const FLASH = 'genai/gemini-2.5-flash'

for (const backend of ['sqlite', 'pg'] as Backend[]) {
  t.test(`responses image_generation: held per image at its cap, billed per image generated (${backend})`, async (t) => {
    const c = await start(t, backend)
    const price = priceOf(GPT4O)
    const perImage = featurePrice(GPT4O, 'image_generation')
    // max_tool_calls caps the hosted tool calls of a response (this SDK version does not type it yet).
    const body = { model: GPT4O, input: 'Draw a cat', tools: [{ type: 'image_generation' }], max_output_tokens: 16, max_tool_calls: 2 } as OpenAI.Responses.ResponseCreateParamsNonStreaming
    const r = await c.openai.responses.create(body, { headers: { 'x-mock-tool-uses': '1' } })
    t.equal(r.output.filter((o) => o.type === 'image_generation_call').length, 1, 'the provider generated one image')
    const row = await lastRow(c)
    // Two uses at most (max_tool_calls 2): the context window three times (the model reads it again after each), 16 output tokens, two images.
    t.equal(row.held, expectedCost(price, { inputTokens: 3 * contextOf(GPT4O), outputTokens: 16 }) + 2n * perImage, 'held: the cap of images and the context per use')
    const tokens = { inputTokens: r.usage?.input_tokens ?? -1, outputTokens: r.usage?.output_tokens ?? -1 }
    t.equal(row.cost, expectedCost(price, tokens) + perImage, 'charged the tokens and one image')
    t.same(row.usage?.features, { image_generation: { uses: 1, reported: true, charge: 'per_use', price: '0.27' } }, 'the receipt names the image and its price')
    await checkBounded(t, [c.gw], 1, 0n)
  })

  t.test(`responses web_search: billed per search the answer reports, JSON and stream (${backend})`, async (t) => {
    const c = await start(t, backend)
    const price = priceOf(GPT4O)
    const perSearch = featurePrice(GPT4O, 'web_search')
    const r = await c.openai.responses.create({ model: GPT4O, input: 'News?', tools: [{ type: 'web_search' }], max_output_tokens: 16 }, { headers: { 'x-mock-tool-uses': '3' } })
    const row = await lastRow(c)
    t.equal(row.held, expectedCost(price, { inputTokens: 11 * contextOf(GPT4O), outputTokens: 16 }) + 10n * perSearch, 'held: the default 10 searches')
    t.equal(row.cost, expectedCost(price, { inputTokens: r.usage?.input_tokens ?? -1, outputTokens: r.usage?.output_tokens ?? -1 }) + 3n * perSearch, 'charged three searches')
    t.same(row.usage?.features, { web_search: { uses: 3, reported: true, charge: 'per_use', price: '0.01' } })

    const stream = await c.openai.responses.create({ model: GPT4O, input: 'News?', tools: [{ type: 'web_search' }], max_output_tokens: 16, stream: true }, { headers: { 'x-mock-tool-uses': '2' } })
    let events = 0
    for await (const event of stream) if (event.type !== undefined) events++
    t.ok(events > 0, 'the stream was read to its end')
    const streamed = await lastRow(c)
    t.same(streamed.usage?.features, { web_search: { uses: 2, reported: true, charge: 'per_use', price: '0.01' } }, 'a stream is read for its searches too')
    await checkBounded(t, [c.gw], 2, 0n)
  })

  t.test(`responses code_interpreter: one container per request (${backend})`, async (t) => {
    const c = await start(t, backend)
    const price = priceOf(GPT4O)
    const container = featurePrice(GPT4O, 'code_interpreter')
    const r = await c.openai.responses.create({ model: GPT4O, input: 'Compute', tools: [{ type: 'code_interpreter', container: { type: 'auto' } }], max_output_tokens: 16 }, { headers: { 'x-mock-tool-uses': '2' } })
    const row = await lastRow(c)
    t.equal(row.cost, expectedCost(price, { inputTokens: r.usage?.input_tokens ?? -1, outputTokens: r.usage?.output_tokens ?? -1 }) + container, 'two runs, one container')
    t.same(row.usage?.features, { code_interpreter: { uses: 1, reported: true, charge: 'per_call', price: '0.03' } })
    await checkBounded(t, [c.gw], 1, 0n)
  })

  t.test(`responses mcp with a tenant-chosen server_url: refused, it has no price (${backend})`, async (t) => {
    const c = await start(t, backend)
    await expectRefused(t, c, async () => await c.openai.responses.create({
      model: GPT4O,
      input: 'hi',
      tools: [{ type: 'function', name: 'f', parameters: {}, strict: false }, { type: 'mcp', server_label: 'x', server_url: 'https://mcp.example.test/', require_approval: 'never' }]
    }), 'tools[1].type')
    // A tool type the gateway does not know at all is refused the same way (deny by default).
    await expectRefused(t, c, async () => await c.openai.responses.create({ model: GPT4O, input: 'hi', tools: [{ type: 'local_shell' }] }), 'tools[0].type')
  })

  t.test(`messages web_search_20250305 with max_uses 20: held for 20, billed the searches reported (${backend})`, async (t) => {
    const c = await start(t, backend)
    const price = priceOf(SONNET)
    const perSearch = featurePrice(SONNET, 'web_search')
    const tools = [{ type: 'web_search_20250305' as const, name: 'web_search' as const, max_uses: 20 }]
    const r = await c.anthropic.messages.create({ model: SONNET, max_tokens: 100, messages: [{ role: 'user', content: 'News?' }], tools }, { headers: { 'x-mock-tool-uses': '5' } })
    t.equal(r.usage.server_tool_use?.web_search_requests, 5, 'the provider reports five searches')
    const row = await lastRow(c)
    t.equal(row.held, expectedCost(price, { inputTokens: 21 * contextOf(SONNET), outputTokens: 100 }) + 20n * perSearch, 'held: 20 searches, the context read after each')
    t.equal(row.cost, expectedCost(price, { inputTokens: r.usage.input_tokens, outputTokens: r.usage.output_tokens }) + 5n * perSearch, 'charged five searches')
    t.same(row.usage?.features, { web_search: { uses: 5, reported: true, charge: 'per_use', price: '0.01' } })

    const stream = c.anthropic.messages.stream({ model: SONNET, max_tokens: 100, messages: [{ role: 'user', content: 'News?' }], tools }, { headers: { 'x-mock-tool-uses': '4' } })
    await stream.finalMessage()
    t.same((await lastRow(c)).usage?.features, { web_search: { uses: 4, reported: true, charge: 'per_use', price: '0.01' } }, 'streamed: read from message_delta')
    await checkBounded(t, [c.gw], 2, 0n)
  })

  t.test(`chat service_tier priority: the multiplier on every token, from the tier the answer states (${backend})`, async (t) => {
    const c = await start(t, backend)
    const price = priceOf(GPT4O)
    const factor = featurePrice(GPT4O, 'priority_tier')
    const r = await c.openai.chat.completions.create({ model: GPT4O, max_tokens: 10, service_tier: 'priority', messages: [{ role: 'user', content: 'hello there' }] })
    t.equal(r.service_tier, 'priority', 'the provider served the priority tier')
    const row = await lastRow(c)
    const tokens = { inputTokens: r.usage?.prompt_tokens ?? -1, outputTokens: r.usage?.completion_tokens ?? -1 }
    t.equal(row.cost, tokensTimes(price, tokens, factor), 'charged 1.7 × the token price')
    t.ok((row.cost ?? 0n) > expectedCost(price, tokens), 'more than the default tier')
    t.same(row.usage?.features, { priority_tier: { uses: 1, reported: true, charge: 'multiplier', price: '1.7' } })
    // The hold: the body's bytes as input, 10 output tokens, times the factor.
    const bodyBytes = c.cap.last().body.length
    t.equal(row.held, tokensTimes(price, { inputTokens: bodyBytes, outputTokens: 10 }, factor), 'held at the priority price')
    // A tier the model does not serve is refused by the tiers it declares.
    const flex = await c.openai.chat.completions.create({ model: GPT4O, max_tokens: 10, service_tier: 'flex', messages: [{ role: 'user', content: 'hi' }] }).then(() => null, (e: unknown) => e)
    t.equal(refusalCode(flex), 'MODEL_SERVICE_TIER_UNAVAILABLE')
    await checkBounded(t, [c.gw], 2, 0n)
  })

  t.test(`genai googleSearch: one grounded prompt when the answer carries grounding metadata (${backend})`, async (t) => {
    const c = await start(t, backend)
    const price = priceOf(FLASH)
    const grounding = featurePrice(FLASH, 'google_search')
    const r = await c.genai.models.generateContent({ model: FLASH, contents: 'News?', config: { tools: [{ googleSearch: {} }], maxOutputTokens: 8 } })
    t.ok(r.candidates?.[0]?.groundingMetadata, 'the answer is grounded')
    const row = await lastRow(c)
    t.equal(row.cost, expectedCost(price, { inputTokens: r.usageMetadata?.promptTokenCount ?? -1, outputTokens: r.usageMetadata?.candidatesTokenCount ?? -1 }) + grounding)
    t.same(row.usage?.features, { google_search: { uses: 1, reported: true, charge: 'per_call', price: '0.035' } })
    await c.genai.models.generateContent({ model: FLASH, contents: 'Hi', config: { tools: [{ googleSearch: {} }], maxOutputTokens: 8, httpOptions: { headers: { 'x-mock-tool-uses': '0' } } } })
    t.same((await lastRow(c)).usage?.features, { google_search: { uses: 0, reported: true, charge: 'per_call', price: '0.035' } }, 'not grounded: not charged')
    await checkBounded(t, [c.gw], 2, 0n)
  })
}

t.test('a tier the model serves but does not price is refused, naming service_tier', async (t) => {
  const cfg = writeTestConfig((c) => { delete modelOf(c, 'openai/gpt-4o-mini').pricing?.features?.priority_tier })
  t.teardown(cfg.remove)
  const c = await start(t, 'sqlite', cfg.file)
  await expectRefused(t, c, async () => await c.openai.chat.completions.create({ model: 'openai/gpt-4o-mini', max_tokens: 5, service_tier: 'priority', messages: [{ role: 'user', content: 'hi' }] }), 'service_tier')
})
