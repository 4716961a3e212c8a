// LangChain JS's three chat models (@langchain/openai, @langchain/anthropic,
// @langchain/google-genai) through the gateway, configured the way their documentation says: a
// base URL and the gateway key. Each makes a plain call and a stream; an unknown model comes back
// as the error type of the client LangChain wraps, carrying our code and message. Every call
// leaves a request log row with the cost its reported usage implies, on the embedded store and
// on PostgreSQL.
import { GoogleGenerativeAIFetchError } from '@google/generative-ai'
import { ChatAnthropic } from '@langchain/anthropic'
import type { AIMessageChunk, UsageMetadata } from '@langchain/core/messages'
import { concat } from '@langchain/core/utils/stream'
import { ChatGoogleGenerativeAI } from '@langchain/google-genai'
import { ChatOpenAI } from '@langchain/openai'
import { OpenAI } from 'openai'
import t, { type Test } from 'tap'
import { replyChunks } from './fixtures/mock-upstream.js'
import { assertBilled, assertRefused, requestLogReader, type Assert } from './helpers/clients.js'
import { startTestGateway, type Backend, type TestGateway } from './helpers/gateway.js'

type ChatModel = ChatOpenAI | ChatAnthropic | ChatGoogleGenerativeAI

function catalogueMessage (gw: TestGateway, code: string): string {
  const entry = gw.config.errors.catalogue.find((e) => e.code === code)
  if (entry === undefined) throw new Error(`no catalogue entry ${code}`)
  return entry.message
}

function tokens (usage: UsageMetadata | undefined): { inputTokens: number, outputTokens: number } {
  if (usage === undefined) throw new Error('the client reported no usage')
  return { inputTokens: usage.input_tokens, outputTokens: usage.output_tokens }
}

function text (content: AIMessageChunk['content']): string {
  if (typeof content === 'string') return content
  return content.map((part) => (part.type === 'text' && 'text' in part && typeof part.text === 'string' ? part.text : '')).join('')
}

async function failure (p: Promise<unknown>): Promise<unknown> {
  return await p.then(() => null, (e: unknown) => e)
}

/** Every chunk of a stream, and their sum as LangChain adds them up. */
async function streamed (model: ChatModel, prompt: string): Promise<{ chunks: AIMessageChunk[], total: AIMessageChunk }> {
  const chunks: AIMessageChunk[] = []
  let total: AIMessageChunk | undefined
  for await (const chunk of await model.stream(prompt)) {
    chunks.push(chunk)
    total = total === undefined ? chunk : concat(total, chunk)
  }
  if (total === undefined) throw new Error('the stream had no chunk')
  return { chunks, total }
}

async function clientsOn (t: Test, backend: Backend): Promise<void> {
  const gw = await startTestGateway({ backend })
  t.teardown(() => gw.close())
  t.beforeEach(() => gw.mock.reset())
  const rows = requestLogReader(gw)

  // What the README tells a LangChain user to write.
  const openai = (model: string, extra: Partial<ConstructorParameters<typeof ChatOpenAI>[0]> = {}): ChatOpenAI =>
    new ChatOpenAI({ model, apiKey: gw.key, configuration: { baseURL: `${gw.url}/v1` }, ...extra })
  const anthropic = (model: string): ChatAnthropic => new ChatAnthropic({ model, apiKey: gw.key, anthropicApiUrl: gw.url })
  const google = (model: string): ChatGoogleGenerativeAI => new ChatGoogleGenerativeAI({ model, apiKey: gw.key, baseUrl: `${gw.url}/genai` })

  const upstreamPath = (): string | undefined => gw.mock.calls.at(-1)?.path

  async function plain (t: Assert, model: ChatModel, id: string, route: string, prompt: string): Promise<void> {
    const r = await model.invoke(prompt)
    t.equal(text(r.content), replyChunks(prompt, 5).join(''), 'the reply')
    assertBilled(t, await rows.next(), { route, model: id, stream: false, units: tokens(r.usage_metadata) })
  }

  async function unknownModel (t: Assert, model: ChatModel, route: string, id: string): Promise<unknown> {
    const err = await failure(model.invoke('anyone there?'))
    t.ok(err instanceof Error, 'an error')
    t.match((err as Error).message, catalogueMessage(gw, 'MODEL_NOT_FOUND'), 'our message in the error message')
    t.equal(gw.mock.calls.length, 0, 'never sent upstream')
    assertRefused(t, await rows.next(), route, id, 'MODEL_NOT_FOUND', 404)
    return err
  }

  t.test('ChatOpenAI', async (t) => {
    t.test('invoke', async (t) => {
      await plain(t, openai('openai/gpt-4o'), 'openai/gpt-4o', 'POST /v1/chat/completions', 'hello from LangChain')
      t.equal(upstreamPath(), '/v1/chat/completions')
    })

    t.test('stream (LangChain asks for the usage chunk itself)', async (t) => {
      const prompt = 'stream from LangChain'
      const { total } = await streamed(openai('openai/gpt-4o-mini'), prompt)
      t.equal(text(total.content), replyChunks(prompt, 5).join(''), 'the streamed reply')
      t.match(gw.mock.calls.at(-1)?.json, { stream: true, stream_options: { include_usage: true } })
      assertBilled(t, await rows.next(), { route: 'POST /v1/chat/completions', model: 'openai/gpt-4o-mini', stream: true, units: tokens(total.usage_metadata) })
    })

    t.test('invoke through the Responses API', async (t) => {
      await plain(t, openai('openai/gpt-4o-mini', { useResponsesApi: true }), 'openai/gpt-4o-mini', 'POST /v1/responses', 'responses from LangChain')
      t.equal(upstreamPath(), '/v1/responses')
    })

    t.test('an unknown model: the OpenAI SDK\'s NotFoundError with our code', async (t) => {
      const err = await unknownModel(t, openai('openai/no-such-model'), 'POST /v1/chat/completions', 'openai/no-such-model')
      t.ok(err instanceof OpenAI.NotFoundError, 'NotFoundError of the openai package LangChain wraps')
      if (!(err instanceof OpenAI.APIError)) return
      t.equal(err.status, 404)
      t.equal(err.code, 'MODEL_NOT_FOUND')
      t.match(err.error, { reference: 'GW-MODEL-3001', billing: { status: 'NOT_BILLED' } })
    })
  })

  t.test('ChatAnthropic', async (t) => {
    t.test('invoke', async (t) => {
      await plain(t, anthropic('anthropic/claude-sonnet-4'), 'anthropic/claude-sonnet-4', 'POST /v1/messages', 'hello Claude from LangChain')
      t.equal(upstreamPath(), '/v1/messages')
    })

    t.test('stream', async (t) => {
      const prompt = 'stream Claude from LangChain'
      const { chunks, total } = await streamed(anthropic('anthropic/claude-haiku-3.5'), prompt)
      t.equal(text(total.content), replyChunks(prompt, 5).join(''), 'the streamed reply')
      // LangChain adds message_start's provisional output count to message_delta's final one;
      // Anthropic's final count (what it bills) is the last one a chunk carries.
      const final = chunks.filter((c) => c.usage_metadata !== undefined).at(-1)?.usage_metadata
      const units = { inputTokens: tokens(total.usage_metadata).inputTokens, outputTokens: tokens(final).outputTokens }
      assertBilled(t, await rows.next(), { route: 'POST /v1/messages', model: 'anthropic/claude-haiku-3.5', stream: true, units })
    })

    t.test('an unknown model: the Anthropic SDK\'s NotFoundError with our code', async (t) => {
      const err = await unknownModel(t, anthropic('anthropic/no-such-model'), 'POST /v1/messages', 'anthropic/no-such-model')
      // LangChain bundles its own copy of @anthropic-ai/sdk, so the class is known by name.
      t.equal((err as Error | null)?.constructor.name, 'NotFoundError', 'NotFoundError of the SDK LangChain wraps')
      t.match(err, { status: 404, error: { type: 'error', error: { type: 'not_found_error', code: 'MODEL_NOT_FOUND', reference: 'GW-MODEL-3001' } } })
    })
  })

  t.test('ChatGoogleGenerativeAI (the model id has a slash, so the client drops `models/` from the path)', async (t) => {
    t.test('invoke', async (t) => {
      await plain(t, google('genai/gemini-2.5-flash'), 'genai/gemini-2.5-flash', 'POST /genai/v1beta/models/{model}:generateContent', 'hello Gemini from LangChain')
      t.equal(upstreamPath(), '/v1beta/models/gemini-2.5-flash:generateContent')
    })

    t.test('stream', async (t) => {
      const prompt = 'stream Gemini from LangChain'
      const { total } = await streamed(google('genai/gemini-2.5-flash'), prompt)
      t.equal(text(total.content), replyChunks(prompt, 5).join(''), 'the streamed reply')
      t.equal(upstreamPath(), '/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse')
      assertBilled(t, await rows.next(), { route: 'POST /genai/v1beta/models/{model}:streamGenerateContent', model: 'genai/gemini-2.5-flash', stream: true, units: tokens(total.usage_metadata) })
    })

    t.test('an unknown model: GoogleGenerativeAIFetchError with our code', async (t) => {
      const err = await unknownModel(t, google('genai/no-such-model'), 'POST /genai/v1beta/models/{model}:generateContent', 'genai/no-such-model')
      t.ok(err instanceof GoogleGenerativeAIFetchError, 'GoogleGenerativeAIFetchError of the client LangChain wraps')
      if (!(err instanceof GoogleGenerativeAIFetchError)) return
      t.equal(err.status, 404)
      t.match(err.errorDetails, [{ reason: 'MODEL_NOT_FOUND', metadata: { reference: 'GW-MODEL-3001', billing_status: 'NOT_BILLED' } }])
    })
  })
}

for (const backend of ['sqlite', 'pg'] as const) {
  t.test(`LangChain JS (${backend})`, async (t) => { await clientsOn(t, backend) })
}
