// Issue 29: Claude and Gemini through the OpenAI SDK at /v1/chat/completions, forwarded to the
// providers' own OpenAI-compatible endpoints (faithful mocks: test/fixtures/providers/
// anthropic-openai.ts, gemini-openai.ts) with the shipped gateway.yaml, on one store backend
// (compat-endpoints-sqlite, compat-endpoints-pg). Each endpoint: a plain call and streams billed
// exactly from the usage the endpoint reported × the model's YAML prices, the body forwarded as
// sent, the provider's errors in the gateway's chat envelope, and the refusals that keep the
// wallet above its floor before anything is held or forwarded.
import { OpenAI } from 'openai'
import type { ChatCompletionChunk, ChatCompletionCreateParamsNonStreaming } from 'openai/resources/chat/completions'
import type { Test } from 'tap'
import { startAnthropicOpenAIMock } from '../fixtures/providers/anthropic-openai.js'
import { startGeminiOpenAIMock } from '../fixtures/providers/gemini-openai.js'
import type { ProviderCall, ProviderMock } from '../fixtures/providers/types.js'
import { replyChunks } from '../fixtures/mock-upstream.js'
import type { JsonObject } from '../fixtures/mock-upstream/text.js'
import { expectedCost, fundedAccount, ledgerState, priceOf, settledRow, type Units } from './billing.js'
import { startTestGateway, type Backend, type TestGateway } from './gateway.js'

interface Endpoint {
  name: string
  /** The catalogue id, and a shipped alias of the chat family for it. */
  model: string
  alias: string
  upstreamModel: string
  /** A model of the same provider without fallbacks (a provider error is not answered by another model). */
  errorModel: string
  upstreamPath: string
  /** The provider credential header the gateway injects (gateway.yaml). */
  credential: string
  mock: () => ProviderMock
  /** The output the provider bills, read from its usage as its documentation says. */
  billedOutput: (usage: JsonObject) => number
}

const num = (v: unknown): number => {
  if (typeof v !== 'number') throw new Error(`not a count: ${String(v)}`)
  return v
}
const field = (v: unknown, key: string): unknown => (v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>)[key] : undefined)

/** The units the endpoint's reported usage bills: input, output as the provider counts it, cached input. */
function unitsOf (ep: Endpoint, usage: JsonObject | null): Units {
  if (usage === null) throw new Error('the endpoint reported no usage')
  return {
    inputTokens: num(usage.prompt_tokens),
    outputTokens: ep.billedOutput(usage),
    cachedInputTokens: Number(field(usage.prompt_tokens_details, 'cached_tokens') ?? 0)
  }
}

async function failure (p: Promise<unknown>): Promise<InstanceType<typeof OpenAI.APIError>> {
  const err = await p.then(() => null, (e: unknown) => e)
  if (!(err instanceof OpenAI.APIError)) throw new Error(`expected an API error, got ${String(err)}`)
  return err
}

const only = (mock: ProviderMock): ProviderCall => {
  if (mock.calls.length !== 1) throw new Error(`${mock.calls.length} upstream calls, expected 1`)
  return mock.calls[0] as ProviderCall
}

export function compatEndpointCases (t: Test, backend: Backend): void {
  let anthropic: ProviderMock
  let gemini: ProviderMock
  let gw: TestGateway
  let openai: OpenAI

  const ENDPOINTS: Endpoint[] = [
    {
      name: 'Anthropic (OpenAI SDK compatibility endpoint)',
      model: 'anthropic/claude-sonnet-4',
      alias: 'claude-sonnet-4-20250514',
      upstreamModel: 'claude-sonnet-4-20250514',
      errorModel: 'anthropic/claude-haiku-3.5',
      upstreamPath: '/v1/chat/completions',
      credential: 'x-api-key',
      mock: () => anthropic,
      // Thinking is billed as output inside completion_tokens (docs.claude.com/en/api/openai-sdk).
      billedOutput: (u) => num(u.completion_tokens)
    },
    {
      name: 'Gemini (OpenAI-compatible endpoint)',
      model: 'genai/gemini-2.5-flash',
      alias: 'gemini-2.5-flash',
      upstreamModel: 'gemini-2.5-flash',
      errorModel: 'genai/gemini-2.5-flash',
      upstreamPath: '/v1beta/openai/chat/completions',
      credential: 'x-goog-api-key',
      mock: () => gemini,
      // Thoughts are billed as output but reported beside completion_tokens, not in it.
      billedOutput: (u) => num(u.completion_tokens) + Number(field(u.completion_tokens_details, 'reasoning_tokens') ?? 0)
    }
  ]

  t.before(async () => {
    // Each mock serves only the provider's own model names: a catalogue id or an alias reaching it would be a 404.
    anthropic = await startAnthropicOpenAIMock({ models: ['claude-sonnet-4-20250514', 'claude-3-5-haiku-20241022'] })
    gemini = await startGeminiOpenAIMock({ models: ['gemini-2.5-flash'] })
    gw = await startTestGateway({
      backend,
      env: {
        ANTHROPIC_BASE_URL: anthropic.url,
        ANTHROPIC_API_KEY: anthropic.apiKey ?? '',
        GENAI_BASE_URL: gemini.url,
        GENAI_API_KEY: gemini.apiKey ?? ''
      }
    })
    openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: gw.key, maxRetries: 0 })
  })
  t.teardown(async () => {
    await gw.close()
    await anthropic.close()
    await gemini.close()
  })
  t.beforeEach(() => {
    anthropic.reset()
    gemini.reset()
  })

  /** The row and the ledger agree with the units at the model's YAML price, and nothing stays held. */
  async function assertBilledExactly (t: Test, requestId: string, model: string, units: Units, stream: boolean, before: bigint): Promise<void> {
    const row = await settledRow(gw, requestId)
    const cost = expectedCost(priceOf(model), units)
    t.match(row, { requestedModel: model, answeredModel: model, route: 'POST /v1/chat/completions', stream, billingStatus: 'BILLED', usageReported: true }, 'logged and billed under the catalogue id, usage reported')
    t.match(row.usage, { inputTokens: units.inputTokens, outputTokens: units.outputTokens, cachedInputTokens: units.cachedInputTokens ?? 0 }, 'the units the endpoint reported')
    t.equal(row.cost, cost, `cost = reported usage × ${model}'s YAML prices`)
    t.ok(cost > 0n, 'a real charge')
    const after = await ledgerState(gw)
    t.equal(after.balance, before - cost, 'the wallet is charged exactly that, once')
    t.equal(after.openHolds, 0, 'no hold left open')
  }

  for (const ep of ENDPOINTS) {
    t.test(ep.name, async (t) => {
      t.test('plain: the OpenAI SDK\'s body reaches the endpoint as sent, the answer comes back as sent, billed from its usage', async (t) => {
        const before = (await ledgerState(gw)).balance
        const params: ChatCompletionCreateParamsNonStreaming = {
          model: ep.model,
          messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'hello from the OpenAI SDK' }],
          temperature: 0.5,
          max_tokens: 64
        }
        const { data, response } = await openai.chat.completions.create(params).withResponse()
        t.equal(data.choices[0]?.message.content, replyChunks('hello from the OpenAI SDK', 5).join(''), 'the endpoint\'s reply')
        t.equal(data.model, ep.upstreamModel, 'the endpoint\'s own answer, not rewritten')
        t.equal(response.headers.get('x-gateway-model'), ep.model, 'X-Gateway-Model: the catalogue id')
        const call = only(ep.mock())
        t.equal(call.path, ep.upstreamPath, 'the provider\'s compatible endpoint')
        t.same(call.json, { ...params, model: ep.upstreamModel }, 'the body untouched but for the model name')
        t.equal(call.headers[ep.credential], ep.mock().apiKey, `the provider credential in ${ep.credential}`)
        t.notOk(JSON.stringify(call.headers).includes(gw.key), 'the gateway key never reaches the provider')
        t.same(data.usage, call.usage, 'the client sees the usage the endpoint sent')
        await assertBilledExactly(t, response.headers.get('x-request-id') ?? '', ep.model, unitsOf(ep, call.usage), false, before)
      })

      t.test('reasoning and cache hits are billed as the provider counts them', async (t) => {
        const before = (await ledgerState(gw)).balance
        ep.mock().once({ reasoningTokens: 40, cachedTokens: 30, inputTokens: 100 })
        const { response } = await openai.chat.completions.create({ model: ep.model, messages: [{ role: 'user', content: 'think first' }] }).withResponse()
        const call = only(ep.mock())
        const units = unitsOf(ep, call.usage)
        t.equal(units.outputTokens, 5 + 40, 'five tokens of answer and 40 thinking tokens billed as output')
        await assertBilledExactly(t, response.headers.get('x-request-id') ?? '', ep.model, units, false, before)
      })

      t.test('stream without include_usage: the gateway asks for the usage and bills it', async (t) => {
        const before = (await ledgerState(gw)).balance
        const { data: stream, response } = await openai.chat.completions.create({ model: ep.model, messages: [{ role: 'user', content: 'stream one two three' }], stream: true }).withResponse()
        const chunks: ChatCompletionChunk[] = []
        for await (const c of stream) chunks.push(c)
        t.equal(chunks.map((c) => c.choices[0]?.delta.content ?? '').join(''), replyChunks('stream one two three', 5).join(''), 'the streamed reply')
        const call = only(ep.mock())
        t.match(call.json, { stream: true, stream_options: { include_usage: true } }, 'include_usage asked on the client\'s behalf')
        t.notOk(chunks.some((c) => c.choices.length === 0), 'no usage-only chunk the client did not ask for')
        await assertBilledExactly(t, response.headers.get('x-request-id') ?? '', ep.model, unitsOf(ep, call.usage), true, before)
      })

      t.test('stream with include_usage: the final usage the client reads is the one billed', async (t) => {
        const before = (await ledgerState(gw)).balance
        ep.mock().once({ reasoningTokens: 7 })
        const { data: stream, response } = await openai.chat.completions.create({
          model: ep.alias, messages: [{ role: 'user', content: 'count with usage' }], stream: true, stream_options: { include_usage: true }
        }).withResponse()
        const usages: unknown[] = []
        for await (const c of stream) if (c.usage != null) usages.push(c.usage)
        const call = only(ep.mock())
        t.equal(call.model, ep.upstreamModel, `the alias ${ep.alias} reaches the provider as its upstream model`)
        t.same(usages.at(-1), call.usage, 'the last usage the client read is the endpoint\'s final one')
        await assertBilledExactly(t, response.headers.get('x-request-id') ?? '', ep.model, unitsOf(ep, call.usage), true, before)
      })

      t.test('provider errors come back in the gateway\'s chat envelope and bill nothing', async (t) => {
        const before = await ledgerState(gw)
        ep.mock().setBehaviour({ status: 500 })
        const server = await failure(openai.chat.completions.create({ model: ep.errorModel, messages: [{ role: 'user', content: 'hi' }] }))
        t.ok(ep.mock().calls.every((c) => c.status === 500) && ep.mock().calls.length > 0, 'the endpoint answered 500')
        ep.mock().reset()
        t.equal(server.status, 502)
        t.match(server.error, { code: 'UPSTREAM_ERROR', reference: 'GW-PROVIDER-6002', billing: { status: 'NOT_BILLED' } }, 'UPSTREAM_ERROR in the chat envelope')
        t.equal(server.headers?.get('x-gateway-billed'), 'false')

        ep.mock().once({ status: 429, retryAfter: 7 })
        const limited = await failure(openai.chat.completions.create({ model: ep.errorModel, messages: [{ role: 'user', content: 'hi' }] }))
        t.ok(limited instanceof OpenAI.RateLimitError, 'the SDK\'s RateLimitError')
        t.match(limited.error, { code: 'LIMIT_RATE_EXCEEDED' }, 'LIMIT_RATE_EXCEEDED in the chat envelope')
        t.equal(limited.headers?.get('retry-after'), '7', 'the provider\'s Retry-After')
        t.equal(ep.mock().calls.length, 1, 'one upstream call')

        for (const err of [server, limited]) {
          const row = await settledRow(gw, err.headers?.get('x-request-id') ?? '')
          t.ok(row.billingStatus === 'NOT_BILLED' && (row.cost ?? 0n) === 0n, `request log: ${err.status}, not billed`)
        }
        const after = await ledgerState(gw)
        t.equal(after.balance, before.balance, 'nothing billed')
        t.equal(after.openHolds, 0, 'every hold released')
      })

      t.test('the floor: a wallet that cannot cover the worst case is refused before anything is held or sent', async (t) => {
        // 0.20: below either model's worst case without max_tokens (Claude Sonnet 4: 64,000 output
        // tokens at 15.00 / 1M; Gemini: 65,536 at 2.50 / 1M, and as many again for the thoughts its
        // meter adds beside completion_tokens), above it with max_tokens 16 (Gemini's thoughts are
        // still held at 65,536).
        const poor = await fundedAccount(gw.services.store, '0.20', `poor ${ep.model}`)
        const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: poor.key, maxRetries: 0 })
        const refused = await failure(client.chat.completions.create({ model: ep.model, messages: [{ role: 'user', content: 'a long answer please' }] }))
        t.equal(refused.status, 402)
        t.match(refused.error, { code: 'BILLING_INSUFFICIENT_CREDITS' })
        t.equal(ep.mock().calls.length, 0, 'nothing forwarded')
        const { response } = await client.chat.completions.create({ model: ep.model, max_tokens: 16, messages: [{ role: 'user', content: 'a short one' }] }).withResponse()
        const row = await settledRow(gw, response.headers.get('x-request-id') ?? '')
        t.equal(row.billingStatus, 'BILLED', 'a bounded request fits and is billed')
        const wallet = await gw.services.store.ledger.wallet(poor.accountId)
        t.ok(wallet.balance >= 0n && wallet.held === 0n, 'the wallet stays above its floor, nothing held')
      })
    })
  }

  t.test('unpriced features are refused before the hold, in the chat envelope', async (t) => {
    const cases: Array<{ what: string, body: Record<string, unknown>, code: string, param: string }> = [
      { what: 'a hosted tool type', body: { model: 'anthropic/claude-sonnet-4', tools: [{ type: 'web_search' }] }, code: 'MODEL_PARAMETER_UNSUPPORTED', param: 'tools[0].type' },
      { what: 'the priority tier Claude does not serve', body: { model: 'anthropic/claude-sonnet-4', service_tier: 'priority' }, code: 'MODEL_SERVICE_TIER_UNAVAILABLE', param: 'service_tier' },
      { what: 'a Gemini context cache of the provider account', body: { model: 'genai/gemini-2.5-flash', extra_body: { google: { cached_content: 'cachedContents/abc' } } }, code: 'MODEL_PARAMETER_UNSUPPORTED', param: 'extra_body.google.cached_content' },
      { what: 'max_tokens above Gemini\'s 65,536', body: { model: 'genai/gemini-2.5-flash', max_tokens: 65537 }, code: 'MODEL_PARAMETER_UNSUPPORTED', param: 'max_tokens' }
    ]
    const before = await ledgerState(gw)
    for (const c of cases) {
      const err = await failure(openai.chat.completions.create({ messages: [{ role: 'user', content: 'hi' }], ...c.body } as unknown as ChatCompletionCreateParamsNonStreaming))
      t.match(err.error, { code: c.code, param: c.param }, `${c.what}: ${c.code}`)
    }
    t.equal(anthropic.calls.length + gemini.calls.length, 0, 'nothing forwarded')
    const after = await ledgerState(gw)
    t.equal(after.entries.length, before.entries.length, 'nothing held or billed')
  })

  t.test('the shipped aliases: a key restricted to one model calls it by its bare names; allowed models, price and X-Gateway-Model read the catalogue id', async (t) => {
    const created = await gw.services.store.keys.create({ accountId: gw.account.id, name: 'sonnet only', allowedModels: ['anthropic/claude-sonnet-4'] })
    if (!created.ok) throw new Error(created.error)
    const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: created.value.plaintext, maxRetries: 0 })
    const claude = ENDPOINTS.find((ep) => ep.model === 'anthropic/claude-sonnet-4')
    if (claude === undefined) throw new Error('no Claude endpoint')
    for (const alias of ['claude-sonnet-4', 'claude-sonnet-4-20250514', 'claude-sonnet-4-0']) {
      const { response } = await client.chat.completions.create({ model: alias, messages: [{ role: 'user', content: 'hi' }] }).withResponse()
      t.equal(response.headers.get('x-gateway-model'), 'anthropic/claude-sonnet-4', `${alias}: X-Gateway-Model is the catalogue id`)
      const row = await settledRow(gw, response.headers.get('x-request-id') ?? '')
      const call = anthropic.calls.at(-1)
      t.equal(call?.model, 'claude-sonnet-4-20250514', `${alias}: the provider receives upstream_model`)
      t.equal(row.cost, expectedCost(priceOf('anthropic/claude-sonnet-4'), unitsOf(claude, call?.usage ?? null)), `${alias}: billed at anthropic/claude-sonnet-4's price`)
    }
    for (const other of ['claude-3-5-haiku-20241022', 'gpt-4o-mini', 'gemini-2.5-flash']) {
      const err = await failure(client.chat.completions.create({ model: other, messages: [{ role: 'user', content: 'hi' }] }))
      t.match(err.error, { code: 'MODEL_ACCESS_DENIED' }, `${other}: the alias of a model the key may not use is refused`)
    }
    t.equal(anthropic.calls.length, 3, 'only the allowed calls were forwarded')
  })

  t.test('Claude\'s max_tokens above the model\'s max_output_tokens is lowered to it (cap_output_tokens), as on /v1/messages', async (t) => {
    await openai.chat.completions.create({ model: 'anthropic/claude-haiku-3.5', max_tokens: 100_000, messages: [{ role: 'user', content: 'hi' }] })
    t.equal(field(only(anthropic).json, 'max_tokens'), 8192, 'claude-haiku-3.5\'s max_output_tokens')
  })
}
