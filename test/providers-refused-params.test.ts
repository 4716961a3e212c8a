// What the OpenAI-compatible providers bill beside the tokens, or what would answer from a model
// other than the one priced, is refused before the hold unless a model prices it: OpenRouter's
// fallback `models` and `plugins` (web search per result), xAI's Live Search `search_parameters`
// (per source), Azure's `data_sources` (a search index the tenant names, read as input). Through
// the OpenAI SDK: 400 MODEL_PARAMETER_UNSUPPORTED naming the field, nothing forwarded, nothing held.
import { OpenAI } from 'openai'
import t from 'tap'
import { startTestGateway } from './helpers/gateway.js'

const CASES: ReadonlyArray<{ model: string, param: string, value: unknown }> = [
  { model: 'openrouter/gpt-4o-mini', param: 'models', value: ['openai/o1-pro'] },
  { model: 'openrouter/gpt-4o-mini', param: 'plugins', value: [{ id: 'web', max_results: 25 }] },
  { model: 'xai/grok-4-fast', param: 'search_parameters', value: { mode: 'on', max_search_results: 30 } },
  { model: 'azure/gpt-4o-mini', param: 'data_sources', value: [{ type: 'azure_search', parameters: { endpoint: 'https://search.example', index_name: 'all' } }] },
]

t.test('provider-billed parameters are refused before the hold', async (t) => {
  const gw = await startTestGateway({ credit: '1.00' })
  t.teardown(() => gw.close())
  const openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: gw.key, maxRetries: 0 })
  const before = await gw.services.store.ledger.wallet(gw.account.id)
  for (const c of CASES) {
    const body = { model: c.model, messages: [{ role: 'user' as const, content: 'hi' }], max_tokens: 8, [c.param]: c.value }
    const err = await openai.chat.completions.create(body).then(() => null, (e: unknown) => e)
    t.ok(err instanceof OpenAI.APIError, `${c.model} ${c.param}: refused`)
    if (!(err instanceof OpenAI.APIError)) continue
    t.same({ status: err.status, code: err.code, param: err.param }, { status: 400, code: 'MODEL_PARAMETER_UNSUPPORTED', param: c.param }, `${c.param}: the catalogue code naming the field`)
  }
  t.equal(gw.mock.calls.length, 0, 'nothing reached a provider')
  t.same(await gw.services.store.ledger.wallet(gw.account.id), before, 'nothing held or charged')
  // The fields belong to the chat operation, whichever model: OpenAI's gpt-4o-mini refuses them
  // too, and answers (through the mock) without them.
  const refused = await openai.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], max_tokens: 8, ...{ models: ['openai/o1-pro'] } }).then(() => null, (e: unknown) => e)
  t.equal(refused instanceof OpenAI.APIError ? refused.code : refused, 'MODEL_PARAMETER_UNSUPPORTED', 'refused on an OpenAI model as well')
  const plain = await openai.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], max_tokens: 8 })
  t.equal(plain.object, 'chat.completion', 'served without it')
})
