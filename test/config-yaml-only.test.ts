// "Adding a model, a provider, a fallback or an endpoint is a config change, never a code change"
// (DESIGN): a gateway started on a YAML file that adds a provider, a pool, models with a fallback
// and a whole new endpoint serves all of them, with no code written for any.
/* eslint-disable no-template-curly-in-string -- these strings are ${VAR} references for the config loader to expand */
import t from 'tap'
import { startMockUpstream } from './fixtures/mock-upstream.js'
import { startTestGateway } from './helpers/gateway.js'
import { writeTestConfig } from './helpers/test-config.js'
import { closedPort } from './helpers/wire.js'

const deadPort = await closedPort()
const operations = { 'chat.completions': { path: '/v1/chat/completions' }, embeddings: { path: '/v1/chat/completions' } }
const pricing = { unit: 'token' as const, input: '0.10', output: '0.10', per: 1000000 }

const cfg = writeTestConfig((c) => {
  c.providers.acme = { base_url: '${ACME_BASE_URL}', headers: { authorization: 'Bearer ${ACME_API_KEY}' }, timeout_ms: 5000, connections: 16 }
  c.providers['acme-down'] = { base_url: `http://127.0.0.1:${deadPort}`, headers: { authorization: 'Bearer unused' } }
  c.pools.acme = [{ provider: 'acme', weight: 1 }]
  c.pools['acme-down'] = [{ provider: 'acme-down' }]
  c.routes.push({ path: '/v1/embeddings', method: 'POST', family: 'chat', operation: 'embeddings', body: ['json'], response: 'json' })
  // A new operation says how it is metered, or check refuses the priced models that serve it.
  c.operations = { embeddings: { meter: { kind: 'tokens', dialect: 'chat' } } }
  c.models.push(
    { id: 'acme/backup-1', status: 'active', pool: 'acme', upstream_model: 'acme-backup-v1', operations, pricing },
    // Its provider is down: every request falls back.
    { id: 'acme/fast-1', status: 'active', pool: 'acme-down', upstream_model: 'acme-fast-v1', operations, pricing, fallbacks: ['acme/backup-1'] },
    // Reachable, but may answer 5xx.
    { id: 'acme/flaky-1', status: 'active', pool: 'acme', upstream_model: 'acme-flaky-v1', operations, pricing, fallbacks: ['acme/backup-1'] }
  )
})
t.teardown(cfg.remove)

const mock = await startMockUpstream()
t.teardown(() => mock.close())
// The new provider's origin and key come from the environment, like the shipped ones.
const gw = await startTestGateway({ configFile: cfg.file, mock, env: { ACME_BASE_URL: mock.url, ACME_API_KEY: 'acme-secret' } })
t.teardown(() => gw.close())
t.beforeEach(() => mock.reset())

function post (path: string, body: unknown): Promise<Response> {
  return fetch(gw.url + path, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${gw.key}` }, body: JSON.stringify(body) })
}
const ask = (model: string): Record<string, unknown> => ({ model, messages: [{ role: 'user', content: 'hello acme' }] })

t.test('a new endpoint declared in routes answers', async (t) => {
  const res = await post('/v1/embeddings', ask('acme/backup-1'))
  t.equal(res.status, 200)
  t.equal(res.headers.get('x-gateway-model'), 'acme/backup-1')
  const call = mock.calls[0]
  t.equal(call?.path, '/v1/chat/completions', 'forwarded to the path the model declares for the new operation')
  t.equal(call?.model, 'acme-backup-v1')
  t.equal(call?.headers.authorization, 'Bearer acme-secret', 'credential of the new provider, from ${ACME_API_KEY}')

  const unknown = await post('/v1/embeddings', ask('acme/none'))
  t.equal(unknown.status, 404)
  t.equal(unknown.headers.get('x-gateway-error-code'), 'MODEL_NOT_FOUND')
  t.match(await unknown.json(), { error: { code: 'MODEL_NOT_FOUND', type: 'not_found_error' } }, 'errors in the envelope of the family the YAML names')

  const wrongOperation = await post('/v1/embeddings', ask('openai/gpt-4o'))
  t.equal(wrongOperation.headers.get('x-gateway-error-code'), 'MODEL_PROTOCOL_UNSUPPORTED', 'a model without the new operation is refused')
})

t.test('the endpoint exists only because of the YAML', async (t) => {
  const plain = await startTestGateway({ mock })
  t.teardown(() => plain.close())
  const res = await fetch(`${plain.url}/v1/embeddings`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(ask('acme/backup-1')) })
  t.equal(res.status, 404)
  t.equal(res.headers.get('x-gateway-error-code'), 'REQUEST_ROUTE_NOT_FOUND')
})

t.test('a new model on a new provider serves an existing endpoint', async (t) => {
  const res = await post('/v1/chat/completions', ask('acme/backup-1'))
  t.equal(res.status, 200)
  const json = await res.json() as { model: string }
  t.equal(json.model, 'acme-backup-v1')
  t.equal(res.headers.get('x-gateway-model'), 'acme/backup-1')
  t.equal(res.headers.get('x-gateway-requested-model'), null)
})

t.test('fallback: the primary provider cannot be reached', async (t) => {
  for (const path of ['/v1/chat/completions', '/v1/embeddings']) {
    mock.reset()
    const res = await post(path, ask('acme/fast-1'))
    t.equal(res.status, 200, `${path} answered`)
    t.equal(res.headers.get('x-gateway-model'), 'acme/backup-1', 'X-Gateway-Model names the fallback that answered')
    t.equal(res.headers.get('x-gateway-requested-model'), 'acme/fast-1', 'X-Gateway-Requested-Model names the primary')
    t.equal(mock.calls.length, 1, 'only the fallback reached the mock')
    t.equal(mock.calls[0]?.model, 'acme-backup-v1')
  }
})

t.test('fallback: the primary answers 503', async (t) => {
  mock.once({ status: 503 })
  const res = await post('/v1/chat/completions', ask('acme/flaky-1'))
  t.equal(res.status, 200)
  t.equal(res.headers.get('x-gateway-model'), 'acme/backup-1')
  t.equal(res.headers.get('x-gateway-requested-model'), 'acme/flaky-1')
  t.same(mock.calls.map((c) => [c.model, c.status]), [['acme-flaky-v1', 503], ['acme-backup-v1', 200]], 'primary tried first, then the fallback')
  const json = await res.json() as { model: string }
  t.equal(json.model, 'acme-backup-v1')
})
