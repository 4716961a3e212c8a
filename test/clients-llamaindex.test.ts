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

type Messages = Array<{ role: 'user', content: string }>
/** A class's `chat`, plain and streamed (both classes' shapes). */
type Chat = (p: { messages: Messages }) => Promise<{ message: { content: unknown }, raw: unknown }>
type StreamChat = (p: { messages: Messages, stream: true }) => Promise<AsyncIterable<{ delta: string }>>

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

  /** What one call should leave: the upstream path it reached, its request log route and catalogue model. */
  interface Expected { path: string, route: string, model: string }

  async function plainChat (t: Test, chat: Chat, prompt: string, want: Expected, units: (raw: unknown) => { inputTokens: number, outputTokens: number }): Promise<void> {
    const r = await chat({ messages: [{ role: 'user', content: prompt }] })
    t.equal(r.message.content, replyChunks(prompt, 5).join(''), 'the reply')
    t.equal(lastCall().path, want.path, 'the bare name reaches the provider as its upstream model')
    assertBilled(t, await rows.next(), { route: want.route, model: want.model, stream: false, units: units(r.raw) })
  }

  async function streamedChat (t: Test, chat: StreamChat, prompt: string, want: Expected): Promise<void> {
    let text = ''
    for await (const chunk of await chat({ messages: [{ role: 'user', content: prompt }], stream: true })) text += chunk.delta
    t.equal(text, replyChunks(prompt, 5).join(''), 'the streamed reply')
    t.equal(lastCall().path, want.path)
    assertBilled(t, await rows.next(), { route: want.route, model: want.model, stream: true, units: reported() })
  }

  t.test('OpenAI class, model gpt-4o-mini', async (t) => {
    const llm = (model: string): OpenAI => new OpenAI({ model, apiKey: gw.key, baseURL: `${gw.url}/v1`, maxRetries: 0 })

    t.test('sizes the context window and tool calls from the bare name', async (t) => {
      t.equal(llm('gpt-4o-mini').metadata.contextWindow, 128_000, 'bare name: 128,000 tokens')
      t.equal(llm('openai/gpt-4o-mini').metadata.contextWindow, 1024, 'the issue: the catalogue id is not in LlamaIndex\'s table (its fallback)')
      t.ok(llm('gpt-4o-mini').supportToolCall, 'tool calls on')
    })

    const want = { path: '/v1/chat/completions', route: 'POST /v1/chat/completions', model: 'openai/gpt-4o-mini' }

    t.test('chat', async (t) => {
      await plainChat(t, async (p) => await llm('gpt-4o-mini').chat(p), 'hello from LlamaIndex', want, (raw) => {
        const usage = field(raw, 'usage')
        return { inputTokens: num(field(usage, 'prompt_tokens')), outputTokens: num(field(usage, 'completion_tokens')) }
      })
      t.equal(lastCall().model, 'gpt-4o-mini', 'the provider receives its own model name')
    })

    t.test('stream (LlamaIndex asks for no usage: the gateway does, and bills it)', async (t) => {
      await streamedChat(t, async (p) => await llm('gpt-4o-mini').chat(p), 'stream from LlamaIndex', want)
      t.match(lastCall().json, { stream: true, stream_options: { include_usage: true } })
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
      const want = { path: '/v1beta/models/gemini-2.5-flash:generateContent', route: 'POST /genai/v1beta/models/{model}:generateContent', model: 'genai/gemini-2.5-flash' }
      await plainChat(t, async (p) => await llm().chat(p), 'hello Gemini from LlamaIndex', want, (raw) => {
        const usage = field(raw, 'usageMetadata')
        return { inputTokens: num(field(usage, 'promptTokenCount')), outputTokens: num(field(usage, 'candidatesTokenCount')) }
      })
    })

    t.test('stream', async (t) => {
      const want = { path: '/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse', route: 'POST /genai/v1beta/models/{model}:streamGenerateContent', model: 'genai/gemini-2.5-flash' }
      await streamedChat(t, async (p) => await llm().chat(p), 'stream Gemini from LlamaIndex', want)
    })
  })
}

for (const backend of ['sqlite', 'pg'] as const) {
  t.test(`LlamaIndex TS (${backend})`, async (t) => { await clientsOn(t, backend) })
}
