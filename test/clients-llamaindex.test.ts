// LlamaIndex TS's OpenAI (@llamaindex/openai) and Gemini (@llamaindex/google) classes through the
// gateway with the bare model names LlamaIndex knows (`gpt-4o-mini`, `gemini-2.5-flash`: the
// shipped aliases), configured as their documentation says: a base URL and the gateway key. With
// a prefixed id LlamaIndex sized openai/gpt-4o-mini's context window at 1,024 tokens, and Gemini's
// class has no size nor tool calls for a name outside its table (issue 29). Each class makes a
// plain chat and a stream, billed at the catalogue id, on the embedded store and on PostgreSQL.
import { Gemini, GEMINI_MODEL } from '@llamaindex/google'
import { OpenAI } from '@llamaindex/openai'
import t, { type Test } from 'tap'
import { replyChunks } from './fixtures/mock-upstream.js'
import { assertBilled, requestLogReader } from './helpers/clients.js'
import { startTestGateway, type Backend } from './helpers/gateway.js'

const num = (v: unknown): number => {
  if (typeof v !== 'number') throw new Error(`not a count: ${String(v)}`)
  return v
}
const field = (v: unknown, key: string): unknown => (v !== null && typeof v === 'object' ? (v as Record<string, unknown>)[key] : undefined)

async function clientsOn (t: Test, backend: Backend): Promise<void> {
  const gw = await startTestGateway({ backend })
  t.teardown(() => gw.close())
  t.beforeEach(() => gw.mock.reset())
  const rows = requestLogReader(gw)
  const lastCall = (): NonNullable<typeof gw.mock.calls[number]> => {
    const call = gw.mock.calls.at(-1)
    if (call === undefined) throw new Error('nothing reached the upstream')
    return call
  }
  /** What the upstream reported for the last call (a stream's usage the client was not shown). */
  const reported = (): { inputTokens: number, outputTokens: number } => {
    const r = lastCall().reported
    if (r == null) throw new Error('the upstream reported no usage')
    return { inputTokens: r.inputTokens, outputTokens: r.outputTokens }
  }

  t.test('OpenAI class, model gpt-4o-mini', async (t) => {
    const llm = (model: string): OpenAI => new OpenAI({ model, apiKey: gw.key, baseURL: `${gw.url}/v1`, maxRetries: 0 })

    t.test('sizes the context window and tool calls from the bare name', async (t) => {
      t.equal(llm('gpt-4o-mini').metadata.contextWindow, 128_000, 'bare name: 128,000 tokens')
      t.equal(llm('openai/gpt-4o-mini').metadata.contextWindow, 1024, 'the issue: the catalogue id is not in LlamaIndex\'s table (its fallback)')
      t.ok(llm('gpt-4o-mini').supportToolCall, 'tool calls on')
    })

    t.test('chat', async (t) => {
      const prompt = 'hello from LlamaIndex'
      const r = await llm('gpt-4o-mini').chat({ messages: [{ role: 'user', content: prompt }] })
      t.equal(r.message.content, replyChunks(prompt, 5).join(''), 'the reply')
      t.match(lastCall(), { path: '/v1/chat/completions', model: 'gpt-4o-mini' }, 'the provider receives its own model name')
      const usage = field(r.raw, 'usage')
      const units = { inputTokens: num(field(usage, 'prompt_tokens')), outputTokens: num(field(usage, 'completion_tokens')) }
      assertBilled(t, await rows.next(), { route: 'POST /v1/chat/completions', model: 'openai/gpt-4o-mini', stream: false, units })
    })

    t.test('stream (LlamaIndex asks for no usage: the gateway does, and bills it)', async (t) => {
      const prompt = 'stream from LlamaIndex'
      let text = ''
      for await (const chunk of await llm('gpt-4o-mini').chat({ messages: [{ role: 'user', content: prompt }], stream: true })) text += chunk.delta
      t.equal(text, replyChunks(prompt, 5).join(''), 'the streamed reply')
      t.match(lastCall().json, { stream: true, stream_options: { include_usage: true } })
      assertBilled(t, await rows.next(), { route: 'POST /v1/chat/completions', model: 'openai/gpt-4o-mini', stream: true, units: reported() })
    })
  })

  t.test('Gemini class, model gemini-2.5-flash', async (t) => {
    // LlamaIndex's own name for it (its type takes only the names of its table): gemini-2.5-flash.
    const model = GEMINI_MODEL.GEMINI_2_5_FLASH_LATEST
    const llm = (): Gemini => new Gemini({ model, apiKey: gw.key, httpOptions: { baseUrl: `${gw.url}/genai` } })

    t.equal(model, 'gemini-2.5-flash', 'the bare name')

    t.test('knows the bare name: its context window and tool calls (the agent starts)', async (t) => {
      t.equal(llm().metadata.contextWindow, 10 ** 6, 'LlamaIndex\'s own figure for gemini-2.5-flash')
      t.ok(llm().supportToolCall, 'tool calls on')
    })

    t.test('chat', async (t) => {
      const prompt = 'hello Gemini from LlamaIndex'
      const r = await llm().chat({ messages: [{ role: 'user', content: prompt }] })
      t.equal(r.message.content, replyChunks(prompt, 5).join(''), 'the reply')
      t.equal(lastCall().path, '/v1beta/models/gemini-2.5-flash:generateContent', 'the alias reaches the provider as its upstream model')
      const usage = field(r.raw, 'usageMetadata')
      const units = { inputTokens: num(field(usage, 'promptTokenCount')), outputTokens: num(field(usage, 'candidatesTokenCount')) }
      assertBilled(t, await rows.next(), { route: 'POST /genai/v1beta/models/{model}:generateContent', model: 'genai/gemini-2.5-flash', stream: false, units })
    })

    t.test('stream', async (t) => {
      const prompt = 'stream Gemini from LlamaIndex'
      let text = ''
      for await (const chunk of await llm().chat({ messages: [{ role: 'user', content: prompt }], stream: true })) text += chunk.delta
      t.equal(text, replyChunks(prompt, 5).join(''), 'the streamed reply')
      t.equal(lastCall().path, '/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse')
      assertBilled(t, await rows.next(), { route: 'POST /genai/v1beta/models/{model}:streamGenerateContent', model: 'genai/gemini-2.5-flash', stream: true, units: reported() })
    })
  })
}

for (const backend of ['sqlite', 'pg'] as const) {
  t.test(`LlamaIndex TS (${backend})`, async (t) => { await clientsOn(t, backend) })
}
