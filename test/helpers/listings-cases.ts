// Model listings and aliases through the official SDKs, on one store backend (listings-sqlite,
// listings-pg): each family's list shows exactly the models the calling key may use there,
// nothing is forwarded, held or billed, a listing is authenticated and rate-limited like a call,
// and a bare alias is served, billed and logged as its catalogue model.
import { Anthropic } from '@anthropic-ai/sdk'
import { GoogleGenAI } from '@google/genai'
import { OpenAI } from 'openai'
import type { Test } from 'tap'
import type { ModelAliasConfig } from '../../plugins/foundation/config/types.js'
import { expectedCost, ledgerState, priceOf, settledRow, waitForRows } from './billing.js'
import { startTestGateway, type Backend, type TestGateway } from './gateway.js'
import { modelOf, writeTestConfig } from './test-config.js'

/**
 * What the shipped catalogue publishes to each family (its models serving an operation of one of
 * the family's routes), with the test config's changes: dall-e-3 paused, gpt-3.5-turbo retired
 * (as shipped), veo-3 a draft.
 */
const CHAT_MODELS = [
  'openai/gpt-4o', 'openai/gpt-4o-mini', 'genai/gemini-2.5-flash', 'openai/gpt-image-1', 'openai/gpt-image-1-edit',
  'openai/whisper-1', 'openai/gpt-4o-mini-transcribe', 'openai/tts-1', 'openai/gpt-4o-mini-tts', 'openai/sora-2', 'music/melody-1',
  // The OpenAI-compatible providers' chat models (docs/providers.md).
  'azure/gpt-4o-mini', 'azure/gpt-4o', 'groq/llama-3.3-70b-versatile', 'groq/llama-3.1-8b-instant', 'groq/gpt-oss-120b',
  'mistral/mistral-large-latest', 'mistral/mistral-small-latest', 'deepseek/deepseek-chat', 'deepseek/deepseek-reasoner',
  'xai/grok-4-fast', 'xai/grok-code-fast-1', 'xai/grok-4', 'together/llama-3.3-70b-instruct-turbo',
  'fireworks/llama-v3p3-70b-instruct', 'fireworks/gpt-oss-120b', 'openrouter/gpt-4o-mini', 'vllm/default', 'ollama/default'
].sort()
const MESSAGES_MODELS = ['anthropic/claude-sonnet-4', 'anthropic/claude-haiku-3.5'].sort()
const GENAI_MODELS = ['genai/gemini-2.5-flash', 'genai/imagen-4'].sort()
/** Claude serves chat.completions too (Anthropic's OpenAI-compatible endpoint): the chat family lists it. */
const CHAT_LISTED = [...CHAT_MODELS, ...MESSAGES_MODELS].sort()

const sorted = (ids: Iterable<string>): string[] => [...ids].sort()

function clients (gw: TestGateway, key: string): { openai: OpenAI, anthropic: Anthropic, genai: GoogleGenAI } {
  return {
    openai: new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: key, maxRetries: 0 }),
    anthropic: new Anthropic({ baseURL: gw.url, apiKey: key, maxRetries: 0 }),
    genai: new GoogleGenAI({ apiKey: key, httpOptions: { baseUrl: `${gw.url}/genai`, retryOptions: { attempts: 1 } } })
  }
}

async function openaiIds (c: OpenAI): Promise<string[]> {
  const ids: string[] = []
  for await (const m of c.models.list()) ids.push(m.id)
  return sorted(ids)
}

async function anthropicIds (c: Anthropic): Promise<string[]> {
  const ids: string[] = []
  for await (const m of c.models.list()) ids.push(m.id)
  return sorted(ids)
}

async function genaiModels (c: GoogleGenAI): Promise<Array<{ name?: string, inputTokenLimit?: number, outputTokenLimit?: number, supportedActions?: string[] }>> {
  const out = []
  for await (const m of await c.models.list()) out.push(m)
  return out
}

async function failure (p: Promise<unknown>): Promise<unknown> {
  try {
    await p
  } catch (err) {
    return err
  }
  throw new Error('the call succeeded')
}

export function listingCases (t: Test, backend: Backend): void {
  const config = writeTestConfig((c) => {
    modelOf(c, 'openai/dall-e-3').status = 'paused'
    modelOf(c, 'genai/veo-3').status = 'draft'
    const families = c.families as Record<string, { aliases?: ModelAliasConfig[] }>
    const aliases = (family: string, list: ModelAliasConfig[]): void => {
      const f = families[family]
      if (f === undefined) throw new Error(`no family ${family}`)
      f.aliases = list
    }
    aliases('chat', [{ alias: 'gpt-4o-mini', model: 'openai/gpt-4o-mini' }, { alias: 'gemini-2.5-flash', model: 'genai/gemini-2.5-flash' }])
    aliases('messages', [{ alias: 'claude-sonnet-4', model: 'anthropic/claude-sonnet-4' }])
    aliases('genai', [{ alias: 'gemini-2.5-flash', model: 'genai/gemini-2.5-flash' }])
  })
  t.teardown(() => { config.remove() })

  let gw: TestGateway
  t.before(async () => { gw = await startTestGateway({ configFile: config.file, backend }) })
  t.teardown(async () => { await gw.close() })

  t.test('each SDK lists exactly the models its family may call with the key, with their limits; nothing is forwarded or billed', async (t) => {
    const before = await ledgerState(gw)
    const { openai, anthropic, genai } = clients(gw, gw.key)
    t.same(await openaiIds(openai), CHAT_LISTED, 'openai.models.list(): the chat family\'s published models (not paused, retired or draft ones)')
    t.same(await anthropicIds(anthropic), MESSAGES_MODELS, 'anthropic.models.list(): the messages family\'s')
    const listed = await genaiModels(genai)
    t.same(sorted(listed.map((m) => m.name ?? '')), GENAI_MODELS.map((id) => `models/${id}`), 'genai.models.list(): the genai family\'s, named models/<id>')
    t.match(listed.find((m) => m.name === 'models/genai/gemini-2.5-flash'), {
      inputTokenLimit: 1048576,
      outputTokenLimit: 65536,
      supportedActions: ['generateContent', 'streamGenerateContent']
    }, 'context window, output limit and the genai actions it serves')

    const retrieved = await openai.models.retrieve('openai/gpt-4o-mini')
    t.same({ ...retrieved }, { id: 'openai/gpt-4o-mini', object: 'model', created: 0, owned_by: 'openai', context_window: 128000, max_output_tokens: 16384 }, 'openai.models.retrieve(id), with the limits OpenAI-compatible servers add')
    t.equal((await openai.models.retrieve('gpt-4o-mini')).id, 'openai/gpt-4o-mini', 'an alias retrieves its catalogue model')
    t.match(await anthropic.models.retrieve('claude-sonnet-4'), { type: 'model', id: 'anthropic/claude-sonnet-4', display_name: 'claude-sonnet-4', max_input_tokens: 200000, max_tokens: 64000 }, 'anthropic.models.retrieve(alias), with its limits')

    const raw = await fetch(`${gw.url}/v1/models`, { headers: { 'x-api-key': gw.key, 'anthropic-version': '2023-06-01' } })
    t.equal(raw.headers.get('x-gateway-billed'), 'false', 'X-Gateway-Billed: false')
    t.match(raw.headers.get('x-request-id'), /^req_[0-9a-f]{32}$/, 'X-Request-ID')
    t.match(await raw.json(), { has_more: false, first_id: 'anthropic/claude-sonnet-4', last_id: 'anthropic/claude-haiku-3.5' }, 'the Anthropic page fields: one page, in catalogue order')

    t.equal(gw.mock.calls.length, 0, 'nothing was sent upstream')
    const rows = await waitForRows([gw], 7)
    t.ok(rows.every((r) => r.billingStatus === 'NOT_BILLED' && r.cost === null && r.holdId === null), 'every listing logged, not billed, nothing held')
    t.same(sorted(new Set(rows.map((r) => r.route))), ['GET /genai/v1beta/models', 'GET /v1/models', 'GET /v1/models (anthropic-version)', 'GET /v1/models/{id}', 'GET /v1/models/{id} (anthropic-version)'])
    const after = await ledgerState(gw)
    t.equal(after.balance, before.balance, 'the wallet is untouched')
    t.equal(after.entries.length, before.entries.length, 'no ledger entry')
  })

  t.test('the Anthropic and GenAI SDKs page through a list one model at a time and get the same models', async (t) => {
    const { anthropic, genai } = clients(gw, gw.key)
    const first = await anthropic.models.list({ limit: 1 })
    t.match(first, { data: [{ id: 'anthropic/claude-sonnet-4' }], has_more: true, first_id: 'anthropic/claude-sonnet-4', last_id: 'anthropic/claude-sonnet-4' }, 'a page of one, more to come')
    const ids: string[] = []
    for await (const m of anthropic.models.list({ limit: 1 })) ids.push(m.id)
    t.same(sorted(ids), MESSAGES_MODELS, 'every page together: the same list')
    const before = await anthropic.models.list({ limit: 5, before_id: 'anthropic/claude-haiku-3.5' })
    t.match(before, { data: [{ id: 'anthropic/claude-sonnet-4' }], has_more: false }, 'before_id pages backwards')
    const pager = await genai.models.list({ config: { pageSize: 1 } })
    t.equal(pager.page.length, 1, 'a GenAI page of one')
    const names: string[] = []
    for await (const m of pager) names.push(m.name ?? '')
    t.same(sorted(names), GENAI_MODELS.map((id) => `models/${id}`), 'the pager follows nextPageToken to the end')
    const bad = await fetch(`${gw.url}/v1/models?limit=0`, { headers: { 'x-api-key': gw.key, 'anthropic-version': '2023-06-01' } })
    t.equal(bad.status, 400)
    t.match(await bad.json(), { type: 'error', error: { type: 'invalid_request_error', code: 'REQUEST_INVALID' } }, 'an invalid limit: REQUEST_INVALID in the messages envelope')
  })

  t.test('a key restricted to two models lists exactly those two, and is refused the others by id', async (t) => {
    const created = await gw.services.store.keys.create({ accountId: gw.account.id, name: 'two models', allowedModels: ['openai/gpt-4o-mini', 'genai/gemini-2.5-flash'] })
    if (!created.ok) throw new Error(created.error)
    const { openai, anthropic, genai } = clients(gw, created.value.plaintext)
    t.same(await openaiIds(openai), ['genai/gemini-2.5-flash', 'openai/gpt-4o-mini'], 'the OpenAI list: exactly the two')
    t.same(await anthropicIds(anthropic), [], 'the messages family can call neither')
    t.same((await genaiModels(genai)).map((m) => m.name), ['models/genai/gemini-2.5-flash'], 'the genai family: the one it serves')
    const denied = await failure(openai.models.retrieve('openai/gpt-4o'))
    t.ok(denied instanceof OpenAI.PermissionDeniedError, 'another model: 403')
    t.match((denied as InstanceType<typeof OpenAI.APIError>).error, { code: 'MODEL_ACCESS_DENIED' }, 'MODEL_ACCESS_DENIED in the chat envelope')
  })

  t.test('an unknown id is MODEL_NOT_FOUND in each family\'s envelope; a paused or retired one as a call would be', async (t) => {
    const { openai, anthropic } = clients(gw, gw.key)
    const chat = await failure(openai.models.retrieve('openai/gpt-99'))
    t.ok(chat instanceof OpenAI.NotFoundError, 'OpenAI SDK: NotFoundError')
    t.match((chat as InstanceType<typeof OpenAI.APIError>).error, { code: 'MODEL_NOT_FOUND', param: 'model' })
    t.equal((chat as InstanceType<typeof OpenAI.APIError>).headers?.get('x-gateway-error-code'), 'MODEL_NOT_FOUND')
    const messages = await failure(anthropic.models.retrieve('anthropic/claude-0'))
    t.ok(messages instanceof Anthropic.NotFoundError, 'Anthropic SDK: NotFoundError')
    t.match((messages as InstanceType<typeof Anthropic.APIError>).error, { type: 'error', error: { type: 'not_found_error', code: 'MODEL_NOT_FOUND' } }, 'the messages envelope')
    const draft = await failure(openai.models.retrieve('genai/veo-3'))
    t.ok(draft instanceof OpenAI.NotFoundError, 'a draft is not found')
    const paused = await failure(openai.models.retrieve('openai/dall-e-3'))
    t.match((paused as InstanceType<typeof OpenAI.APIError>).error, { code: 'MODEL_TEMPORARILY_UNAVAILABLE' }, 'a paused model')
    const retired = await failure(openai.models.retrieve('openai/gpt-3.5-turbo'))
    t.match((retired as InstanceType<typeof OpenAI.APIError>).error, { code: 'MODEL_RETIRED' }, 'a retired model')
  })

  t.test('a listing is authenticated: no key, or an unknown one, is refused in the family\'s envelope', async (t) => {
    const none = await fetch(`${gw.url}/v1/models`)
    t.equal(none.status, 401)
    t.match(await none.json(), { error: { code: 'AUTH_API_KEY_REQUIRED' } })
    const anthropic = await failure(clients(gw, 'sk-unknown').anthropic.models.list())
    t.ok(anthropic instanceof Anthropic.AuthenticationError, 'Anthropic SDK: AuthenticationError')
    t.match((anthropic as InstanceType<typeof Anthropic.APIError>).error, { type: 'error', error: { type: 'authentication_error' } }, 'the messages envelope')
    const genaiRaw = await fetch(`${gw.url}/genai/v1beta/models?pageSize=1`, { headers: { 'x-goog-api-key': 'sk-unknown' } })
    t.equal(genaiRaw.status, 401)
    t.match(await genaiRaw.json(), { error: { code: 401, status: 'AUTH_INVALID_API_KEY' } }, 'the genai envelope')
  })

  t.test('a bare alias through the OpenAI SDK is served, billed at the catalogue model\'s price and logged under its id', async (t) => {
    gw.mock.reset()
    const { openai } = clients(gw, gw.key)
    const { data, response } = await openai.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hello alias' }] }).withResponse()
    t.equal(response.headers.get('x-gateway-model'), 'openai/gpt-4o-mini', 'X-Gateway-Model: the catalogue id')
    t.equal(gw.mock.calls[0]?.model, 'gpt-4o-mini', 'the provider receives its own model name')
    const row = await settledRow(gw, response.headers.get('x-request-id') ?? '')
    t.match(row, { requestedModel: 'openai/gpt-4o-mini', answeredModel: 'openai/gpt-4o-mini', billingStatus: 'BILLED', outcome: 'completed' }, 'logged under the catalogue id')
    const usage = data.usage
    if (usage === undefined) throw new Error('no usage')
    const units = { inputTokens: usage.prompt_tokens, outputTokens: usage.completion_tokens, cachedInputTokens: usage.prompt_tokens_details?.cached_tokens ?? 0 }
    t.equal(row.cost, expectedCost(priceOf('openai/gpt-4o-mini'), units), 'billed at openai/gpt-4o-mini\'s price')
    t.not(row.cost, expectedCost(priceOf('openai/gpt-4o'), units), 'which is not another model\'s')
  })

  t.test('an alias of the messages and genai families: the provider receives its upstream model, everything else the catalogue id', async (t) => {
    gw.mock.reset()
    const { anthropic, genai } = clients(gw, gw.key)
    const { response } = await anthropic.messages.create({ model: 'claude-sonnet-4', max_tokens: 16, messages: [{ role: 'user', content: 'hello alias' }] }).withResponse()
    t.equal(response.headers.get('x-gateway-model'), 'anthropic/claude-sonnet-4')
    t.equal(gw.mock.calls[0]?.model, 'claude-sonnet-4-20250514', 'the provider receives the upstream_model, not the alias')
    const row = await settledRow(gw, response.headers.get('x-request-id') ?? '')
    t.match(row, { requestedModel: 'anthropic/claude-sonnet-4', answeredModel: 'anthropic/claude-sonnet-4', billingStatus: 'BILLED' })
    const r = await genai.models.generateContent({ model: 'gemini-2.5-flash', contents: 'hello alias' })
    t.equal(r.sdkHttpResponse?.headers?.['x-gateway-model'], 'genai/gemini-2.5-flash', 'a {model} path segment resolves the genai family\'s alias')
    t.equal(gw.mock.calls[1]?.path, '/v1beta/models/gemini-2.5-flash:generateContent')
  })

  t.test('a bare name with no alias of the family is not found', async (t) => {
    const { openai } = clients(gw, gw.key)
    const err = await failure(openai.chat.completions.create({ model: 'claude-sonnet-4', messages: [{ role: 'user', content: 'hi' }] }))
    t.match((err as InstanceType<typeof OpenAI.APIError>).error, { code: 'MODEL_NOT_FOUND' }, 'claude-sonnet-4 is an alias of the messages family only')
  })

  t.test('listings are rate-limited like every call', async (t) => {
    const limited = await startTestGateway({
      configFile: config.file,
      mock: gw.mock,
      shareStoreWith: gw,
      limits: { tiers: { free: { rank: 0, requests_per_minute: 2, concurrent_streams: 4, overdraft: '0' } }, default_tier: 'free' }
    })
    t.teardown(async () => { await limited.close() })
    const { openai } = clients(limited, gw.key)
    await openai.models.list()
    await openai.models.list()
    const err = await failure(openai.models.list())
    t.ok(err instanceof OpenAI.RateLimitError, 'the third in the minute: 429')
    t.match((err as InstanceType<typeof OpenAI.APIError>).error, { code: 'LIMIT_RATE_EXCEEDED' })
  })
}
