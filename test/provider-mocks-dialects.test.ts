// What single provider mocks do that the others do not (Azure's deployment path, api-version and
// content filter; keep-alives; running usage; cost fields; refusals before generating), and the
// steering every mock shares with the existing one — through the official OpenAI SDK where a
// client is involved, raw HTTP where the point is a request the SDK would not send.
import { AzureOpenAI, BadRequestError, NotFoundError, OpenAI, type APIError } from 'openai'
import type { ChatCompletionChunk } from 'openai/resources/chat/completions'
import t, { type Test } from 'tap'
import {
  startAnthropicOpenAIMock, startAzureMock, startDeepSeekMock, startGeminiOpenAIMock, startGroqMock,
  startMistralMock, startOllamaMock, startOpenRouterMock, startVllmMock, startXaiMock, type ProviderMock
} from './fixtures/providers/index.js'
import { tokensFor } from './fixtures/mock-upstream.js'

const messages = [{ role: 'user' as const, content: 'Hello mock provider world' }]
const INPUT = tokensFor(messages[0]?.content.length ?? 0)

async function start (mock: Promise<ProviderMock>, t: Test): Promise<ProviderMock> {
  const m = await mock
  t.teardown(() => m.close())
  return m
}

function sdk (m: ProviderMock, apiKey = m.apiKey ?? 'unused'): OpenAI {
  return new OpenAI({ baseURL: m.baseURL, apiKey, maxRetries: 0 })
}

async function rejection (p: Promise<unknown>): Promise<APIError> {
  try { await p } catch (err) { return err as APIError }
  throw new Error('expected a rejection')
}

async function collect (stream: AsyncIterable<ChatCompletionChunk>): Promise<ChatCompletionChunk[]> {
  const out: ChatCompletionChunk[] = []
  for await (const c of stream) out.push(c)
  return out
}

function post (m: ProviderMock, path: string, headers: Record<string, string>, body: unknown): Promise<Response> {
  return fetch(`${m.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) })
}

function sent (m: ProviderMock, i = 0): string {
  return m.calls[i]?.response?.toString('utf8') ?? ''
}

t.test('Azure: deployment path, api-version, key header, content filter', async (t) => {
  const m = await start(startAzureMock({ deployments: { 'gpt4o-prod': 'gpt-4o-2024-08-06' } }), t)
  const azure = (apiVersion = '2024-10-21', deployment = 'gpt4o-prod'): AzureOpenAI =>
    new AzureOpenAI({ endpoint: m.url, apiKey: m.apiKey ?? '', apiVersion, deployment, maxRetries: 0 })
  t.beforeEach(() => m.reset())

  t.test('the answer names the deployment\'s model and carries the filter results', async (t) => {
    const { data, response } = await azure().chat.completions.create({ model: 'anything', messages }).withResponse()
    t.equal(data.model, 'gpt-4o-2024-08-06')
    t.equal(m.calls[0]?.deployment, 'gpt4o-prod')
    t.match(m.calls[0]?.path, /^\/openai\/deployments\/gpt4o-prod\/chat\/completions\?api-version=2024-10-21$/)
    t.equal(m.calls[0]?.headers['api-key'], m.apiKey, 'the SDK sent the key in api-key')
    t.match(data, { prompt_filter_results: [{ prompt_index: 0, content_filter_results: { hate: { filtered: false } } }] })
    t.match(data.choices[0], { content_filter_results: { violence: { filtered: false, severity: 'safe' } } })
    t.ok(response.headers.get('x-ratelimit-remaining-requests'), 'rate-limit headers')
    t.ok(response.headers.get('apim-request-id'))
  })

  t.test('a stream opens with the prompt-filter chunk of empty id and model', async (t) => {
    const chunks = await collect(await azure().chat.completions.create({ model: 'x', messages, stream: true }))
    t.match(chunks[0], { id: '', model: '', choices: [], prompt_filter_results: [{ prompt_index: 0 }] })
    t.equal(chunks[1]?.model, 'gpt-4o-2024-08-06')
  })

  t.test('no api-version: 404 Resource not found, before the key is even looked at', async (t) => {
    const r = await post(m, '/openai/deployments/gpt4o-prod/chat/completions', {}, { messages })
    t.equal(r.status, 404)
    t.strictSame(await r.json(), { error: { code: '404', message: 'Resource not found' } })
  })

  t.test('an unknown api-version: BadRequestError, API version not supported', async (t) => {
    const err = await rejection(azure('1999-01-01').chat.completions.create({ model: 'x', messages }))
    t.type(err, BadRequestError)
    t.strictSame(JSON.parse(sent(m)), { error: { code: 'BadRequest', message: 'API version not supported' } })
    t.equal(m.calls[0]?.produced, undefined)
  })

  t.test('an unknown deployment: NotFoundError, DeploymentNotFound', async (t) => {
    const err = await rejection(azure('2024-10-21', 'nope').chat.completions.create({ model: 'x', messages }))
    t.type(err, NotFoundError)
    t.equal(err.code, 'DeploymentNotFound')
  })

  t.test('the key as a Bearer token: 401 in the token-error shape; the v1 API takes it', async (t) => {
    const r = await post(m, '/openai/deployments/gpt4o-prod/chat/completions?api-version=2024-10-21', { authorization: `Bearer ${m.apiKey ?? ''}` }, { messages })
    t.equal(r.status, 401)
    t.match(await r.json(), { statusCode: 401, message: /Access token is missing/ })
    const v1 = await sdk(m).chat.completions.create({ model: 'gpt-4o-mini', messages })
    t.equal(v1.model, 'gpt-4o-mini', 'the v1 API takes the model from the body')
    t.equal(m.calls[1]?.headers.authorization, `Bearer ${m.apiKey ?? ''}`)
  })

  t.test('content filter on the prompt: 400 content_filter with innererror', async (t) => {
    const err = await rejection(azure().chat.completions.create({ model: 'x', messages }, { headers: { 'x-mock-content-filter': 'prompt' } }))
    t.type(err, BadRequestError)
    t.equal(err.code, 'content_filter')
    t.match(err.error, { param: 'prompt', innererror: { code: 'ResponsibleAIPolicyViolation', content_filter_result: { hate: { filtered: true } } } })
  })

  t.test('content filter on the completion: finish_reason content_filter, no content', async (t) => {
    const r = await azure().chat.completions.create({ model: 'x', messages }, { headers: { 'x-mock-content-filter': 'completion' } })
    t.equal(r.choices[0]?.finish_reason, 'content_filter')
    t.equal(r.choices[0]?.message.content, null)
    t.match(r.choices[0], { content_filter_results: { hate: { filtered: true, severity: 'high' } } })
  })
})

t.test('Groq: x_groq on the answer and the first chunk; usage under x_groq unasked', async (t) => {
  const m = await start(startGroqMock(), t)
  const { data, response } = await sdk(m).chat.completions.create({ model: 'llama-3.3-70b-versatile', messages }).withResponse()
  t.match(data, { x_groq: { id: /^req_/ }, service_tier: 'on_demand', usage: { queue_time: Number } })
  t.equal(response.headers.get('x-ratelimit-limit-tokens'), '6000')
  const chunks = await collect(await sdk(m).chat.completions.create({ model: 'm', messages, stream: true }))
  t.match(chunks[0], { x_groq: { id: /^req_/, seed: Number } })
  t.match(chunks.at(-1), { x_groq: { usage: { prompt_tokens: INPUT, completion_tokens: 5 } } })
})

t.test('DeepSeek: keep-alives before the body (blank lines, `: keep-alive`); the key masked in its 401', async (t) => {
  const m = await start(startDeepSeekMock(), t)
  const r = await sdk(m).chat.completions.create({ model: 'deepseek-chat', messages }, { headers: { 'x-mock-keepalives': '3' } })
  t.equal(r.choices[0]?.finish_reason, 'stop', 'the SDK parsed past the blank lines')
  t.match(sent(m), /^\n\n\n\{/)
  const chunks = await collect(await sdk(m).chat.completions.create({ model: 'deepseek-chat', messages, stream: true }, { headers: { 'x-mock-keepalives': '2' } }))
  t.equal(chunks.at(-1)?.choices[0]?.finish_reason, 'stop')
  t.match(sent(m, 1), /^: keep-alive\n\n: keep-alive\n\ndata: /)
  const err = await rejection(sdk(m, 'sk-wrong1234').chat.completions.create({ model: 'deepseek-chat', messages }))
  t.match(err.error, { message: 'Authentication Fails, Your api key: ****1234 is invalid', type: 'authentication_error', code: 'invalid_request_error' })
})

t.test('xAI: reasoning outside completion_tokens, inside total and cost; a bad key is 400 { code, error }', async (t) => {
  const m = await start(startXaiMock(), t)
  const r = await sdk(m).chat.completions.create({ model: 'grok-4-fast', messages }, { headers: { 'x-mock-reasoning-tokens': '125' } })
  t.match(r.usage, { completion_tokens: 5, total_tokens: INPUT + 5 + 125, completion_tokens_details: { reasoning_tokens: 125 } })
  const err = await rejection(sdk(m, 'bad-key-xx').chat.completions.create({ model: 'grok-4-fast', messages }))
  t.type(err, BadRequestError)
  t.match(JSON.parse(sent(m, 1)), { code: 'Client specified an invalid argument', error: /^Incorrect API key provided: ba\*\*\*xx\./ })
})

t.test('OpenRouter: whitespace and comment keep-alives, cost, usage.include accepted, finish chunk repeated', async (t) => {
  const m = await start(startOpenRouterMock(), t)
  const params = { model: 'openai/gpt-4o-mini', messages, usage: { include: true } }
  const { data, response } = await sdk(m).chat.completions.create(params).withResponse()
  t.match(sent(m), /^\n {9}\n\{/, 'the JSON follows a whitespace keep-alive')
  t.ok(response.headers.get('x-generation-id'))
  const cost = (data.usage as unknown as { cost: number }).cost
  t.ok(Math.abs(cost - (INPUT * 0.15 + 5 * 0.6) / 1e6) < 1e-15, `cost ${cost} in credits`)
  const chunks = await collect(await sdk(m).chat.completions.create({ ...params, stream: true }))
  t.match(sent(m, 1), /^: OPENROUTER PROCESSING\n\ndata: /)
  const finishes = chunks.filter((c) => c.choices[0]?.finish_reason === 'stop')
  t.equal(finishes.length, 2, 'the finish chunk, then again with usage')
  t.equal(finishes[0]?.usage, undefined)
  t.match(finishes[1]?.usage, { prompt_tokens: INPUT, cost: Number })
  const err = await rejection(new OpenAI({ baseURL: m.baseURL, apiKey: 'x', maxRetries: 0, defaultHeaders: { authorization: null } }).chat.completions.create(params))
  t.equal(err.status, 401)
  t.match(err.error, { code: 401, message: 'No auth credentials found' })
})

t.test('vLLM: no key by default; stream_options need stream; continuous_usage_stats', async (t) => {
  const m = await start(startVllmMock(), t)
  t.equal(m.apiKey, null)
  t.ok(await sdk(m, 'whatever').chat.completions.create({ model: 'Qwen/Qwen3-0.6B', messages }))
  const err = await rejection(sdk(m).chat.completions.create({ model: 'q', messages, stream_options: { include_usage: true } }))
  t.type(err, BadRequestError)
  t.match(err.error, { type: 'BadRequestError', code: 400, message: /stream=True/ })
  // vLLM's own stream option, unknown to the SDK's types (a variable passes it through as is).
  const continuous = { model: 'q', messages, stream: true as const, stream_options: { include_usage: true, continuous_usage_stats: true } }
  const chunks = await collect(await sdk(m).chat.completions.create(continuous))
  const running = chunks.map((c) => c.usage?.completion_tokens)
  t.strictSame(running, [0, 1, 2, 3, 4, 5, 5], 'every chunk: the running count (role chunk, 5 words, finish)')
})

t.test('Ollama: no credential checked, unknown model 404, usage chunk only when asked and no `usage: null`', async (t) => {
  const m = await start(startOllamaMock({ models: ['llama3.2'] }), t)
  const err = await rejection(sdk(m, 'ollama').chat.completions.create({ model: 'mistral', messages }))
  t.type(err, NotFoundError)
  t.match(err.error, { type: 'not_found_error', message: 'model "mistral" not found, try pulling it first' })
  await collect(await sdk(m, 'ollama').chat.completions.create({ model: 'llama3.2', messages, stream: true, stream_options: { include_usage: true } }))
  t.notMatch(sent(m, 1), /"usage":null/)
  t.match(sent(m, 1), /"choices":\[\],"usage":\{"prompt_tokens"/)
})

t.test('Anthropic compatible endpoint: x-api-key or Bearer, n must be 1, no cache counts', async (t) => {
  const m = await start(startAnthropicOpenAIMock(), t)
  const r = await post(m, '/v1/chat/completions', { 'x-api-key': m.apiKey ?? '', 'x-mock-cached-tokens': '9' }, { model: 'claude-sonnet-4-20250514', messages })
  t.equal(r.status, 200)
  t.strictSame(Object.keys((await r.json() as { usage: object }).usage), ['prompt_tokens', 'completion_tokens', 'total_tokens'])
  const err = await rejection(sdk(m).chat.completions.create({ model: 'claude-sonnet-4-20250514', messages, n: 2 }))
  t.type(err, BadRequestError)
  t.match(JSON.parse(sent(m, 1)), { type: 'error', error: { type: 'invalid_request_error' } })
})

t.test('Gemini compatible endpoint: errors in an array; running usage that must not be summed', async (t) => {
  const m = await start(startGeminiOpenAIMock({ models: ['gemini-2.5-flash'] }), t)
  const err = await rejection(sdk(m).chat.completions.create({ model: 'gemini-9', messages }))
  t.type(err, NotFoundError)
  t.match(JSON.parse(sent(m)), [{ error: { code: 404, status: 'NOT_FOUND' } }])
  const chunks = await collect(await sdk(m).chat.completions.create({ model: 'gemini-2.5-flash', messages, stream: true, stream_options: { include_usage: true } }))
  t.strictSame(chunks.map((c) => c.usage?.completion_tokens), [1, 2, 3, 4, 5, 5])
  t.equal(chunks.reduce((s, c) => s + (c.usage?.completion_tokens ?? 0), 0) > 5, true, 'summing would overcount')
})

t.test('steering shared with the existing mock: latency, chunks, truncation, cut, usage modes, counting', async (t) => {
  const m = await start(startMistralMock(), t)
  const client = sdk(m)
  t.equal(m.calls.length, 0, 'nothing forwarded before the first request')
  const began = Date.now()
  const r = await client.chat.completions.create({ model: 'mistral-small-latest', messages }, { headers: { 'x-mock-delay-ms': '150', 'x-mock-chunks': '2' } })
  t.ok(Date.now() - began >= 140, 'delayed')
  t.equal(r.choices[0]?.message.content, 'echo: Hello')
  const short = await client.chat.completions.create({ model: 'm', messages, max_tokens: 3 })
  t.equal(short.choices[0]?.finish_reason, 'length')
  t.equal(short.usage?.completion_tokens, 3)
  m.once({ cutAfter: 2 })
  await t.rejects(collect(await client.chat.completions.create({ model: 'm', messages, stream: true })))
  const cut = m.calls.at(-1)
  t.match(cut, { cut: true, completed: false, produced: { outputTokens: 2 }, usage: null })
  const none = await client.chat.completions.create({ model: 'm', messages }, { headers: { 'x-mock-usage': 'none' } })
  t.equal(none.usage, undefined)
  const hostile = await client.chat.completions.create({ model: 'm', messages }, { headers: { 'x-mock-usage': 'negative' } })
  t.ok((hostile.usage?.prompt_tokens ?? 0) < 0)
  t.equal(m.calls.length, 5)
  m.reset()
  t.equal(m.calls.length, 0)
})
