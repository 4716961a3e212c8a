// The finding of the wallet issue: a chat call with a 100 KB tool description whose client left
// after 0.5 s (upstream cancelled, the default) was billed 1 input token. The estimate now
// counts every input the provider reads: the charge is at least what the provider bills for
// that prompt and at most the hold. Through the official SDKs (an AbortController after 0.5 s
// against a slowly streaming mock), for the chat, messages and generate-content families, on
// both stores. References, computed apart from the gateway: OpenAI's own count of the request
// (gpt-tokenizer's chat and function-definition count for gpt-4o); for Claude and Gemini, whose
// tokenizers are not public, the description's UTF-8 bytes (no byte-level tokenizer counts more
// tokens than bytes) plus Anthropic's documented tool prompt (346 tokens on Claude 4).
import Anthropic from '@anthropic-ai/sdk'
import { GoogleGenAI } from '@google/genai'
import OpenAI from 'openai'
import t, { type Test } from 'tap'
import { countChatCompletionTokens } from 'gpt-tokenizer/model/gpt-4o'
import { expectedCost, priceOf, settledRow } from './helpers/billing.js'
import { startTestGateway, type Backend, type TestGateway } from './helpers/gateway.js'

const DESCRIPTION = 'Looks up the current weather for a city, with wind, rain and a long explanation. '.repeat(1300).slice(0, 100_000)
const PARAMETERS = { type: 'object', properties: { city: { type: 'string', description: 'the city' } }, required: ['city'] }
const SLOW = { 'x-mock-chunks': '200', 'x-mock-chunk-delay-ms': '50' }

/**
 * Streams until the AbortController fires 0.5 s after the stream began (its response arrived; the
 * provider sends 200 chunks over 10 s, so the client leaves mid-stream); returns the request id.
 * Timed from the response, not from the request's start, so a slow machine cannot abort the
 * request before it is answered.
 */
async function leaveAfterHalfASecond (start: (signal: AbortSignal) => Promise<{ requestId: string, iterate: () => Promise<void> }>): Promise<string> {
  const controller = new AbortController()
  const { requestId, iterate } = await start(controller.signal)
  const timer = setTimeout(() => { controller.abort() }, 500)
  await iterate().catch(() => {})
  clearTimeout(timer)
  return requestId
}

interface Check { model: string, reference: number, requestId: string }

async function check (t: Test, gw: TestGateway, c: Check): Promise<void> {
  const row = await settledRow(gw, c.requestId)
  t.equal(row.outcome, 'client_disconnected', 'the client left mid-stream')
  t.equal(row.usageReported, false, 'the usage is an estimate')
  t.ok(gw.mock.calls.at(-1)?.completed === false, 'the upstream was cancelled before it finished')
  const input = row.usage?.inputTokens ?? 0
  t.ok(input >= c.reference, `input estimated ${input} ≥ the provider's ${c.reference}`)
  const floor = expectedCost(priceOf(c.model), { inputTokens: c.reference, outputTokens: 0 })
  t.ok(row.cost !== null && row.cost >= floor, `charged ${String(row.cost)} ≥ ${floor}, the provider's price of that prompt`)
  t.ok(row.cost !== null && row.held !== null && row.cost <= row.held, `and ≤ the hold ${String(row.held)}`)
  t.equal(row.billingStatus, 'BILLED')
}

for (const backend of ['sqlite', 'pg'] as Backend[]) {
  t.test(`a 100 KB tool description, client gone after 0.5 s: billed at least the provider's count (${backend})`, async (t) => {
    const gw = await startTestGateway({ backend })
    t.teardown(() => gw.close())

    t.test('chat completions (openai SDK, gpt-4o)', async (t) => {
      const openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: gw.key, maxRetries: 0 })
      const messages = [{ role: 'user' as const, content: 'What is the weather in Paris?' }]
      const requestId = await leaveAfterHalfASecond(async (signal) => {
        const r = await openai.chat.completions.create({
          model: 'openai/gpt-4o', stream: true, messages, tools: [{ type: 'function', function: { name: 'weather', description: DESCRIPTION, parameters: PARAMETERS } }]
        }, { signal, headers: SLOW }).withResponse()
        return { requestId: r.response.headers.get('x-request-id') ?? '', iterate: async () => { for await (const event of r.data) if (event === null) break } }
      })
      const count = countChatCompletionTokens as NonNullable<typeof countChatCompletionTokens>
      const reference = count({ messages, functions: [{ name: 'weather', description: DESCRIPTION, parameters: PARAMETERS as never }] })
      t.ok(reference > 20_000, `OpenAI counts ${reference} tokens for this prompt`)
      await check(t, gw, { model: 'openai/gpt-4o', reference, requestId })
    })

    t.test('messages (anthropic SDK, claude-sonnet-4, no usage reported)', async (t) => {
      const anthropic = new Anthropic({ baseURL: gw.url, apiKey: gw.key, maxRetries: 0 })
      const requestId = await leaveAfterHalfASecond(async (signal) => {
        const r = await anthropic.messages.create({
          model: 'anthropic/claude-sonnet-4',
          max_tokens: 1000,
          stream: true,
          messages: [{ role: 'user', content: 'What is the weather in Paris?' }],
          tools: [{ name: 'weather', description: DESCRIPTION, input_schema: PARAMETERS as Anthropic.Tool.InputSchema }]
        }, { signal, headers: { ...SLOW, 'x-mock-usage': 'none' } }).withResponse()
        return { requestId: r.response.headers.get('x-request-id') ?? '', iterate: async () => { for await (const event of r.data) if (event === null) break } }
      })
      await check(t, gw, { model: 'anthropic/claude-sonnet-4', reference: Buffer.byteLength(DESCRIPTION) + 346, requestId })
    })

    t.test('generate content (google genai SDK, gemini-2.5-flash, systemInstruction and tools)', async (t) => {
      const controller = new AbortController()
      const genai = new GoogleGenAI({ apiKey: gw.key, httpOptions: { baseUrl: `${gw.url}/genai`, retryOptions: { attempts: 1 }, headers: { ...SLOW, 'x-mock-usage': 'none' } } })
      let requestId = ''
      const timer = setTimeout(() => { controller.abort() }, 500)
      try {
        const stream = await genai.models.generateContentStream({
          model: 'genai/gemini-2.5-flash',
          contents: 'What is the weather in Paris?',
          config: {
            abortSignal: controller.signal,
            systemInstruction: 'Answer briefly.',
            tools: [{ functionDeclarations: [{ name: 'weather', description: DESCRIPTION, parametersJsonSchema: PARAMETERS }] }],
            thinkingConfig: { thinkingBudget: 0 }
          }
        })
        for await (const chunk of stream) requestId = chunk.sdkHttpResponse?.headers?.['x-request-id'] ?? requestId
      } catch {}
      clearTimeout(timer)
      if (requestId === '') {
        // The SDK hides the headers of a stream it aborted: the request log names the request.
        const { rows } = await gw.services.store.requestLog.list({ limit: 1 })
        requestId = rows[0]?.requestId ?? ''
      }
      await check(t, gw, { model: 'genai/gemini-2.5-flash', reference: Buffer.byteLength(DESCRIPTION), requestId })
    })
  })
}
