// The shipped OpenAI-compatible providers (gateway.yaml, docs/providers.md) through the official
// OpenAI SDK, each in front of the faithful mock of its wire format (test/fixtures/providers/),
// on one store backend (providers-<store>-a/-b): a plain answer, a stream, the provider's errors
// answered in the chat envelope, and each bill equal to the provider's own reported usage × the
// model's YAML price. The usage is read here from the provider's documented fields, not by the
// gateway's meter: this file's reading of each dialect is the expectation the YAML must meet.
import { OpenAI } from 'openai'
import type { Test } from 'tap'
import type { JsonObject } from '../fixtures/mock-upstream/text.js'
import { PROVIDER_DIALECTS, startProviderMockByName, type ProviderCall, type ProviderMock, type ProviderName } from '../fixtures/providers/index.js'
import type { RequestLogRow } from '../../plugins/foundation/store/request-log/types.js'
import { expectedCost, ledgerState, priceOf, settledRow } from './billing.js'
import { startTestGateway, type Backend, type TestGateway } from './gateway.js'
import { modelOf, writeTestConfig, type RawConfig, type TestConfig } from './test-config.js'

/** A shipped provider: its model under test and the environment its YAML entry reads. */
export interface ShippedProvider {
  name: ProviderName
  model: string
  /** The variables of its base URL and credential (docs/providers.md). */
  baseUrlVar: string
  keyVar: string | null
  /** The upstream path a chat call must reach (Azure: the deployment path with its api-version). */
  path: string
  /** The provider sends the usage in every stream unasked: the gateway must not add stream_options. */
  streamUsageAlways: boolean
}

export const SHIPPED: Readonly<Record<string, ShippedProvider>> = {
  azure: { name: 'azure', model: 'azure/gpt-4o-mini', baseUrlVar: 'AZURE_OPENAI_ENDPOINT', keyVar: 'AZURE_OPENAI_API_KEY', path: '/openai/deployments/gpt-4o-mini/chat/completions?api-version=2024-10-21', streamUsageAlways: false },
  groq: { name: 'groq', model: 'groq/llama-3.3-70b-versatile', baseUrlVar: 'GROQ_BASE_URL', keyVar: 'GROQ_API_KEY', path: '/openai/v1/chat/completions', streamUsageAlways: false },
  mistral: { name: 'mistral', model: 'mistral/mistral-small-latest', baseUrlVar: 'MISTRAL_BASE_URL', keyVar: 'MISTRAL_API_KEY', path: '/v1/chat/completions', streamUsageAlways: true },
  deepseek: { name: 'deepseek', model: 'deepseek/deepseek-chat', baseUrlVar: 'DEEPSEEK_BASE_URL', keyVar: 'DEEPSEEK_API_KEY', path: '/chat/completions', streamUsageAlways: false },
  xai: { name: 'xai', model: 'xai/grok-4-fast', baseUrlVar: 'XAI_BASE_URL', keyVar: 'XAI_API_KEY', path: '/v1/chat/completions', streamUsageAlways: false },
  together: { name: 'together', model: 'together/llama-3.3-70b-instruct-turbo', baseUrlVar: 'TOGETHER_BASE_URL', keyVar: 'TOGETHER_API_KEY', path: '/v1/chat/completions', streamUsageAlways: true },
  fireworks: { name: 'fireworks', model: 'fireworks/llama-v3p3-70b-instruct', baseUrlVar: 'FIREWORKS_BASE_URL', keyVar: 'FIREWORKS_API_KEY', path: '/inference/v1/chat/completions', streamUsageAlways: true },
  openrouter: { name: 'openrouter', model: 'openrouter/gpt-4o-mini', baseUrlVar: 'OPENROUTER_BASE_URL', keyVar: 'OPENROUTER_API_KEY', path: '/api/v1/chat/completions', streamUsageAlways: true },
  vllm: { name: 'vllm', model: 'vllm/default', baseUrlVar: 'VLLM_BASE_URL', keyVar: null, path: '/v1/chat/completions', streamUsageAlways: false },
  ollama: { name: 'ollama', model: 'ollama/default', baseUrlVar: 'OLLAMA_BASE_URL', keyVar: null, path: '/v1/chat/completions', streamUsageAlways: false }
}

const num = (v: unknown): number => (typeof v === 'number' ? v : 0)
const obj = (v: unknown): JsonObject => (v !== null && typeof v === 'object' && !Array.isArray(v) ? v as JsonObject : {})

/**
 * What a provider's usage object says was used, read as its documentation defines the fields
 * (docs/providers.md, "What each provider reports"): DeepSeek's cache hits are
 * prompt_cache_hit_tokens, Together's a top-level cached_tokens, xAI's reasoning is billed as
 * output but reported beside completion_tokens; the rest report OpenAI's fields.
 */
export function reportedUnits (provider: ProviderName, usage: JsonObject): { inputTokens: number, outputTokens: number, cachedInputTokens: number } {
  const inputTokens = num(usage.prompt_tokens)
  let outputTokens = num(usage.completion_tokens)
  let cachedInputTokens = num(obj(usage.prompt_tokens_details).cached_tokens)
  if (provider === 'deepseek') cachedInputTokens = num(usage.prompt_cache_hit_tokens)
  if (provider === 'together') cachedInputTokens = num(usage.cached_tokens)
  if (provider === 'xai') outputTokens += num(obj(usage.completion_tokens_details).reasoning_tokens)
  return { inputTokens, outputTokens, cachedInputTokens }
}

/** The local servers ship at price 0 (the operator's to set): the test sets one, so a bill can be wrong. */
const LOCAL_PRICES: Readonly<Record<string, { input: string, output: string }>> = {
  'vllm/default': { input: '0.10', output: '0.20' },
  'ollama/default': { input: '0.05', output: '0.15' }
}

/** The price of `model` as the gateway's YAML says (its `${VAR}` expanded; the local servers' as the operator set them above). */
function yamlPrice (gw: TestGateway, model: string): ReturnType<typeof priceOf> {
  return priceOf(model, gw.config as unknown as RawConfig)
}

async function rowOf (gw: TestGateway, requestId: string | null | undefined): Promise<RequestLogRow> {
  if (requestId === null || requestId === undefined) throw new Error('no x-request-id')
  return await settledRow(gw, requestId)
}

async function failure (p: Promise<unknown>): Promise<InstanceType<typeof OpenAI.APIError>> {
  try {
    await p
  } catch (err) {
    if (err instanceof OpenAI.APIError) return err
    throw err
  }
  throw new Error('the call succeeded')
}

/**
 * One gateway on `backend` with the repository's gateway.yaml, every provider in `names` pointed
 * at its own mock through the variables its YAML entry reads, and the cases of each.
 */
export function providerCases (t: Test, backend: Backend, names: readonly string[]): void {
  const mocks = new Map<string, ProviderMock>()
  let gw: TestGateway
  let openai: OpenAI
  let config: TestConfig | undefined

  t.before(async () => {
    const env: Record<string, string> = {}
    for (const name of names) {
      const p = SHIPPED[name]
      if (p === undefined) throw new Error(`no shipped provider ${name}`)
      const mock = await startProviderMockByName(p.name)
      mocks.set(name, mock)
      env[p.baseUrlVar] = mock.url
      if (p.keyVar !== null && mock.apiKey !== null) env[p.keyVar] = mock.apiKey
    }
    config = writeTestConfig((c) => {
      for (const [id, price] of Object.entries(LOCAL_PRICES)) Object.assign(modelOf(c, id).pricing ?? {}, price)
    })
    gw = await startTestGateway({ backend, env, configFile: config.file })
    openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: gw.key, maxRetries: 0 })
  })
  t.teardown(async () => {
    await gw?.close()
    await Promise.all([...mocks.values()].map(async (m) => { await m.close() }))
    config?.remove()
  })

  for (const name of names) {
    const p = SHIPPED[name] as ShippedProvider
    const mockOf = (): ProviderMock => mocks.get(name) as ProviderMock
    const lastCall = (): ProviderCall => {
      const call = mockOf().calls.at(-1)
      if (call === undefined) throw new Error(`nothing reached the ${name} mock`)
      return call
    }
    const billOf = (call: ProviderCall): bigint => {
      if (call.usage === null) throw new Error(`the ${name} mock reported no usage`)
      return expectedCost(yamlPrice(gw, p.model), reportedUnits(p.name, call.usage))
    }

    t.test(`${name}: a plain answer through the OpenAI SDK, billed from the provider's usage`, async (t) => {
      const mock = mockOf()
      mock.reset()
      // Cache hits and reasoning, so each dialect's own fields for them are read (or ignored) as the
      // provider means them; keep-alives before the answer where the provider sends them (DeepSeek, OpenRouter).
      mock.setBehaviour({ cachedTokens: 4, reasoningTokens: 3, inputTokens: 24, keepAlives: 2 })
      const { data, response } = await openai.chat.completions.create({
        model: p.model,
        messages: [{ role: 'user', content: `hello ${name}, tell me about the gateway in a few words` }]
      }).withResponse()
      t.equal(response.status, 200)
      t.equal(response.headers.get('x-gateway-model'), p.model, 'X-Gateway-Model: the catalogue id')
      t.ok((data.choices[0]?.message.content ?? '').length > 0, 'the provider\'s answer')
      const call = lastCall()
      t.equal(mock.calls.length, 1, 'one upstream call')
      t.equal(call.path, p.path, 'the provider\'s own path (and query)')
      const upstreamModel = gw.config.models.find((m) => m.id === p.model)?.upstream_model
      t.equal((call.json as JsonObject | undefined)?.model, upstreamModel, 'the provider\'s model name (Azure: the deployment\'s), not the catalogue id')
      t.notOk(Object.values(call.headers).some((v) => v.includes(gw.key)), 'the client\'s gateway key never reaches the provider')
      if (PROVIDER_DIALECTS[p.name].chat.keepAlive !== undefined) {
        t.match(call.response?.toString('utf8') ?? '', /^\s*\n\s*\{/, 'the provider sent keep-alive lines before its JSON, which the meter skips')
      }
      const row = await rowOf(gw, response.headers.get('x-request-id'))
      t.equal(row.billingStatus, 'BILLED')
      t.equal(row.usageReported, true, 'the usage is the provider\'s, not an estimate')
      t.equal(row.cost, billOf(call), `billed ${name}'s reported usage × the YAML price: ${JSON.stringify(call.usage)}`)
    })

    t.test(`${name}: a stream through the OpenAI SDK, billed from the provider's stream usage`, async (t) => {
      const mock = mockOf()
      mock.reset()
      mock.setBehaviour({ cachedTokens: 2, reasoningTokens: 5, chunks: 6, inputTokens: 17, keepAlives: 2 })
      const before = await ledgerState(gw)
      const { data: stream, response } = await openai.chat.completions.create({
        model: p.model,
        stream: true,
        messages: [{ role: 'user', content: `stream for ${name}` }]
      }).withResponse()
      let text = ''
      const usageOnly: unknown[] = []
      for await (const chunk of stream) {
        text += chunk.choices[0]?.delta?.content ?? ''
        if (chunk.choices.length === 0 && chunk.usage != null) usageOnly.push(chunk.usage)
      }
      t.ok(text.length > 0, 'the streamed text')
      const call = lastCall()
      const options = (call.json as JsonObject | undefined)?.stream_options
      if (p.streamUsageAlways) {
        t.equal(options, undefined, 'nothing added to the body: the provider reports usage in every stream')
      } else {
        t.same(options, { include_usage: true }, 'the gateway asked for the usage chunk on the client\'s behalf')
        t.same(usageOnly, [], 'and kept the usage-only chunk the client did not ask for out of its stream')
      }
      t.not(call.usage, null, 'the provider reported its usage in the stream')
      const row = await rowOf(gw, response.headers.get('x-request-id'))
      t.equal(row.billingStatus, 'BILLED')
      t.equal(row.usageReported, true, 'the usage is the provider\'s, not an estimate')
      t.equal(row.cost, billOf(call), `billed the stream's reported usage × the YAML price: ${JSON.stringify(call.usage)}`)
      const after = await ledgerState(gw)
      t.equal(after.charged - before.charged, row.cost, 'the ledger charge is the request log\'s cost')
      t.equal(after.openHolds, 0, 'no hold left open')
    })

    t.test(`${name}: the provider's errors in the gateway's chat envelope, not billed`, async (t) => {
      const mock = mockOf()
      mock.reset()
      const before = await ledgerState(gw)
      const ask = { model: p.model, messages: [{ role: 'user' as const, content: 'fail please' }] }

      mock.once({ status: 429, retryAfter: 7 })
      const limited = await failure(openai.chat.completions.create(ask))
      t.equal(limited.status, 429, 'a provider 429 is the gateway\'s 429')
      t.match(limited.error, { code: 'LIMIT_RATE_EXCEEDED', type: 'rate_limit_error' }, 'LIMIT_RATE_EXCEEDED in the chat envelope')
      t.equal(limited.headers?.get('retry-after'), '7', 'with the provider\'s Retry-After')
      const limitedRow = await rowOf(gw, limited.requestID)
      t.equal(limitedRow.errorCode, 'LIMIT_RATE_EXCEEDED')

      mock.once({ status: 500 })
      const broken = await failure(openai.chat.completions.create({ ...ask, stream: true }))
      t.equal(broken.status, 502, 'a provider 500 is a 502')
      t.match(broken.error, { code: 'UPSTREAM_ERROR', type: 'upstream_error' }, 'UPSTREAM_ERROR in the chat envelope (a stream fails before its first byte alike)')
      const brokenRow = await rowOf(gw, broken.requestID)
      t.equal(brokenRow.errorCode, 'UPSTREAM_ERROR')

      for (const row of [limitedRow, brokenRow]) {
        t.equal(row.billingStatus, 'NOT_BILLED', `${row.errorCode ?? ''} not billed`)
        t.equal(row.cost ?? 0n, 0n, 'no cost posted')
      }
      t.same(mock.calls.map((c) => c.status), [429, 500], 'each reached the provider once (one member, no retry)')
      const after = await ledgerState(gw)
      t.equal(after.charged, before.charged, 'nothing charged')
      t.equal(after.balance, before.balance, 'the wallet is untouched')
    })
  }
}
