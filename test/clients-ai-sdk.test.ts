// The Vercel AI SDK 5 (`ai` with its openai, anthropic and google providers) through the gateway,
// configured the way its documentation says: a base URL and the gateway key, nothing else. Each
// provider makes a plain call and a stream; openai also generates an image and speech, google an
// image; an unknown model comes back as the SDK's own APICallError carrying our code and message.
// Every call leaves a request log row with the cost its reported usage implies, on the embedded
// store and on PostgreSQL.
import { createHash } from 'node:crypto'
import { createAnthropic } from '@ai-sdk/anthropic'
import { createGoogleGenerativeAI } from '@ai-sdk/google'
import { createOpenAI } from '@ai-sdk/openai'
import {
  APICallError, experimental_generateImage as generateImage, experimental_generateSpeech as generateSpeech,
  generateText, streamText, type LanguageModel, type LanguageModelUsage
} from 'ai'
import t, { type Test } from 'tap'
import { replyChunks } from './fixtures/mock-upstream.js'
import { codePoints } from './helpers/billing.js'
import { assertBilled, assertRefused, requestLogReader, type Assert } from './helpers/clients.js'
import { startTestGateway, type Backend, type TestGateway } from './helpers/gateway.js'

// The providers warn on stderr about ids they do not know (ours carry a provider prefix).
globalThis.AI_SDK_LOG_WARNINGS = false

const sha256 = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex')

function catalogueMessage (gw: TestGateway, code: string): string {
  const entry = gw.config.errors.catalogue.find((e) => e.code === code)
  if (entry === undefined) throw new Error(`no catalogue entry ${code}`)
  return entry.message
}

/** Token counts the SDK reported; both must be there for the cost check to mean anything. */
function tokens (usage: LanguageModelUsage): { inputTokens: number, outputTokens: number } {
  if (usage.inputTokens === undefined || usage.outputTokens === undefined) throw new Error(`the SDK reported no token usage: ${JSON.stringify(usage)}`)
  return { inputTokens: usage.inputTokens, outputTokens: usage.outputTokens }
}

async function failure (p: Promise<unknown>): Promise<unknown> {
  return await p.then(() => null, (e: unknown) => e)
}

async function clientsOn (t: Test, backend: Backend): Promise<void> {
  const gw = await startTestGateway({ backend })
  t.teardown(() => gw.close())
  t.beforeEach(() => gw.mock.reset())
  const rows = requestLogReader(gw)

  // What the README tells an AI SDK user to write.
  const openai = createOpenAI({ baseURL: `${gw.url}/v1`, apiKey: gw.key })
  const anthropic = createAnthropic({ baseURL: `${gw.url}/v1`, apiKey: gw.key })
  const google = createGoogleGenerativeAI({ baseURL: `${gw.url}/genai/v1beta`, apiKey: gw.key })

  const upstreamPath = (): string | undefined => gw.mock.calls.at(-1)?.path

  async function plain (t: Assert, model: LanguageModel, id: string, route: string, prompt: string): Promise<Awaited<ReturnType<typeof generateText>>> {
    const r = await generateText({ model, prompt })
    t.equal(r.text, replyChunks(prompt, 5).join(''), 'the reply')
    assertBilled(t, await rows.next(), { route, model: id, stream: false, units: tokens(r.usage) })
    return r
  }

  async function stream (t: Assert, model: LanguageModel, id: string, route: string, prompt: string): Promise<void> {
    const r = streamText({ model, prompt, onError: () => {} })
    let text = ''
    for await (const delta of r.textStream) text += delta
    t.equal(text, replyChunks(prompt, 5).join(''), 'the streamed reply')
    assertBilled(t, await rows.next(), { route, model: id, stream: true, units: tokens(await r.usage) })
  }

  /** An unknown model: APICallError with our status, message and code, not retried, nothing billed. */
  async function unknownModel (t: Assert, model: LanguageModel, route: string, id: string): Promise<APICallError | undefined> {
    const err = await failure(generateText({ model, prompt: 'anyone there?' }))
    t.ok(APICallError.isInstance(err), 'the SDK\'s own APICallError')
    if (!APICallError.isInstance(err)) return undefined
    t.equal(err.statusCode, 404)
    t.equal(err.message, catalogueMessage(gw, 'MODEL_NOT_FOUND'), 'our message is the error message')
    t.equal(err.isRetryable, false, 'the SDK does not retry it')
    t.equal(err.responseHeaders?.['x-gateway-error-code'], 'MODEL_NOT_FOUND', 'our code in X-Gateway-Error-Code')
    t.equal(gw.mock.calls.length, 0, 'never sent upstream')
    assertRefused(t, await rows.next(), route, id, 'MODEL_NOT_FOUND', 404)
    return err
  }

  t.test('openai provider', async (t) => {
    t.test('generateText (Responses API, the provider default)', async (t) => {
      await plain(t, openai('openai/gpt-4o'), 'openai/gpt-4o', 'POST /v1/responses', 'hello from the AI SDK')
      t.equal(upstreamPath(), '/v1/responses')
    })

    t.test('streamText (Responses API)', async (t) => {
      await stream(t, openai('openai/gpt-4o-mini'), 'openai/gpt-4o-mini', 'POST /v1/responses', 'stream from the AI SDK')
    })

    t.test('generateText (chat completions)', async (t) => {
      await plain(t, openai.chat('openai/gpt-4o-mini'), 'openai/gpt-4o-mini', 'POST /v1/chat/completions', 'chat from the AI SDK')
      t.equal(upstreamPath(), '/v1/chat/completions')
    })

    t.test('streamText (chat completions, asking for the usage chunk itself)', async (t) => {
      await stream(t, openai.chat('openai/gpt-4o'), 'openai/gpt-4o', 'POST /v1/chat/completions', 'chat stream from the AI SDK')
      t.match(gw.mock.calls.at(-1)?.json, { stream: true, stream_options: { include_usage: true } })
    })

    t.test('a generative-content model through the chat family', async (t) => {
      await plain(t, openai.chat('genai/gemini-2.5-flash'), 'genai/gemini-2.5-flash', 'POST /v1/chat/completions', 'gemini over chat completions')
      t.equal(upstreamPath(), '/v1beta/openai/chat/completions')
    })

    t.test('generateImage (the SDK sends response_format, which gpt-image models refuse)', async (t) => {
      const r = await generateImage({ model: openai.image('openai/gpt-image-1'), prompt: 'a small red dot', n: 1 })
      t.equal(r.images.length, 1)
      t.equal(r.image.mediaType, 'image/png', 'the provider\'s PNG came through')
      t.match(gw.mock.calls.at(-1)?.json, { model: 'gpt-image-1', prompt: 'a small red dot', n: 1 })
      t.notOk(Object.hasOwn(gw.mock.calls.at(-1)?.json ?? {}, 'response_format'), 'drop_fields took response_format out')
      // What the answer said it rendered and the prompt tokens it reported, as the SDK passes them on.
      const meta = (r.providerMetadata.openai?.images ?? []) as Array<{ quality?: string, size?: string, inputTokens?: number }>
      const first = meta[0]
      t.equal(meta.length, r.images.length, 'provider metadata for each image')
      if (first?.quality === undefined || first.size === undefined) throw new Error('the answer named no quality or size')
      const imageTier = { quality: first.quality, size: first.size }
      const inputTokens = meta.reduce((sum, m) => sum + (m.inputTokens ?? 0), 0)
      assertBilled(t, await rows.next(), { route: 'POST /v1/images/generations', model: 'openai/gpt-image-1', stream: false, units: { images: r.images.length, imageTier, inputTokens } })
    })

    t.test('generateSpeech', async (t) => {
      const text = 'Read this sentence aloud, please.'
      const r = await generateSpeech({ model: openai.speech('openai/tts-1'), text, voice: 'alloy' })
      t.equal(r.audio.mediaType, 'audio/mpeg')
      const sent = gw.mock.calls.at(-1)?.response
      t.ok(sent !== undefined && sent.length > 0, 'the provider sent audio')
      t.equal(sha256(r.audio.uint8Array), sha256(sent ?? Buffer.alloc(0)), 'the audio bytes the provider sent')
      assertBilled(t, await rows.next(), { route: 'POST /v1/audio/speech', model: 'openai/tts-1', stream: false, units: { characters: codePoints(text) } })
    })

    t.test('an unknown model', async (t) => {
      const err = await unknownModel(t, openai.chat('openai/no-such-model'), 'POST /v1/chat/completions', 'openai/no-such-model')
      t.match(err?.data, { error: { code: 'MODEL_NOT_FOUND', type: 'not_found_error', param: 'model' } }, 'our code in the parsed error body')
    })
  })

  t.test('anthropic provider', async (t) => {
    t.test('generateText (the SDK asks an unknown id for more tokens than Claude allows)', async (t) => {
      const r = await plain(t, anthropic('anthropic/claude-sonnet-4'), 'anthropic/claude-sonnet-4', 'POST /v1/messages', 'hello Claude from the AI SDK')
      t.equal(upstreamPath(), '/v1/messages')
      t.match(r.request.body, { max_tokens: 128000 }, 'what the SDK sent')
      t.match(gw.mock.calls.at(-1)?.json, { max_tokens: 64000 }, 'cap_output_tokens lowered it to the model\'s max_output_tokens')
    })

    t.test('streamText', async (t) => {
      await stream(t, anthropic('anthropic/claude-haiku-3.5'), 'anthropic/claude-haiku-3.5', 'POST /v1/messages', 'stream Claude from the AI SDK')
    })

    t.test('an unknown model', async (t) => {
      const err = await unknownModel(t, anthropic('anthropic/no-such-model'), 'POST /v1/messages', 'anthropic/no-such-model')
      t.match(err?.data, { type: 'error', error: { type: 'not_found_error' } }, 'the messages envelope')
      t.match(err?.responseBody, /"code":"MODEL_NOT_FOUND"/, 'our code in the error body')
    })
  })

  t.test('google provider (the model id has a slash, so the SDK drops `models/` from the path)', async (t) => {
    t.test('generateText', async (t) => {
      await plain(t, google('genai/gemini-2.5-flash'), 'genai/gemini-2.5-flash', 'POST /genai/v1beta/models/{model}:generateContent', 'hello Gemini from the AI SDK')
      t.equal(upstreamPath(), '/v1beta/models/gemini-2.5-flash:generateContent')
    })

    t.test('streamText', async (t) => {
      await stream(t, google('genai/gemini-2.5-flash'), 'genai/gemini-2.5-flash', 'POST /genai/v1beta/models/{model}:streamGenerateContent', 'stream Gemini from the AI SDK')
      t.equal(upstreamPath(), '/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse')
    })

    t.test('generateImage (Imagen, `:predict`)', async (t) => {
      const r = await generateImage({ model: google.image('genai/imagen-4'), prompt: 'two blue dots', n: 2 })
      t.equal(r.images.length, 2)
      t.equal(upstreamPath(), '/v1beta/models/imagen-4.0-generate-001:predict')
      assertBilled(t, await rows.next(), { route: 'POST /genai/v1beta/models/{model}:generateImages', model: 'genai/imagen-4', stream: false, units: { images: r.images.length } })
    })

    t.test('an unknown model', async (t) => {
      const err = await unknownModel(t, google('genai/no-such-model'), 'POST /genai/v1beta/models/{model}:generateContent', 'genai/no-such-model')
      t.match(err?.data, { error: { code: 404, status: 'MODEL_NOT_FOUND' } }, 'our code in the generative-content envelope')
    })
  })
}

for (const backend of ['sqlite', 'pg'] as const) {
  t.test(`Vercel AI SDK (${backend})`, async (t) => { await clientsOn(t, backend) })
}
