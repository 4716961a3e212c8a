// A new endpoint, its operation and a model that serves it, added by YAML alone, are billed:
// the operation's entry under `operations:` names its meter (tokens, chat dialect), and an
// embeddings request through the OpenAI SDK costs what the mock upstream reported, taken from
// the wallet exactly once. Before the operations table the same YAML was served free.
import t from 'tap'
import { OpenAI } from 'openai'
import { expectedCost, ledgerState, priceOf, settledRow } from './helpers/billing.js'
import { startTestGateway, type Backend } from './helpers/gateway.js'
import { readRepoConfig, writeTestConfig, type RawConfig } from './helpers/test-config.js'

const MODEL = 'openai/text-embedding-3-small'

function addEmbeddings (c: RawConfig): void {
  c.routes.push({ path: '/v1/embeddings', method: 'POST', family: 'chat', operation: 'embeddings', body: ['json'], response: 'json' })
  c.operations = { embeddings: { meter: { kind: 'tokens', dialect: 'chat' } } }
  c.models.push({
    id: MODEL,
    status: 'active',
    pool: 'openai',
    upstream_model: 'text-embedding-3-small',
    operations: { embeddings: { path: '/v1/embeddings' } },
    pricing: { unit: 'token', input: '20.00', output: '20.00', per: 1000000 }
  })
}

const cfg = writeTestConfig(addEmbeddings)
t.teardown(cfg.remove)
const raw = readRepoConfig()
addEmbeddings(raw)
const price = priceOf(MODEL, raw)

for (const backend of ['sqlite', 'pg'] as Backend[]) {
  t.test(`an embeddings endpoint declared only in YAML is billed (${backend})`, async (t) => {
    const gw = await startTestGateway({ configFile: cfg.file, backend })
    t.teardown(() => gw.close())
    const openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: gw.key, maxRetries: 0 })
    const before = await ledgerState(gw)

    const { data, response } = await openai.embeddings.create({ model: MODEL, input: ['the quick brown fox', 'jumps over the lazy dog'] }).withResponse()
    t.equal(data.data.length, 2, 'one vector per input')
    t.equal(data.data[0]?.embedding.length, 8, 'the SDK decoded the base64 vectors it asked for')
    t.equal(response.headers.get('x-gateway-model'), MODEL)

    t.equal(gw.mock.calls.length, 1, 'forwarded once')
    const call = gw.mock.calls[0]
    t.equal(call?.path, '/v1/embeddings')
    t.equal(call?.model, 'text-embedding-3-small')
    const inputTokens = call?.produced?.inputTokens ?? 0
    t.ok(inputTokens > 0, `the upstream reported ${inputTokens} prompt tokens`)

    const row = await settledRow(gw, response.headers.get('x-request-id') ?? '')
    t.equal(row.operation, 'embeddings')
    t.equal(row.billingStatus, 'BILLED')
    t.equal(row.usage?.inputTokens, inputTokens, 'the chat dialect read prompt_tokens')
    const cost = expectedCost(price, { inputTokens })
    t.ok(cost > 0n, `expected cost ${cost} nano-units`)
    t.equal(row.cost, cost, 'request log cost = reported tokens × the YAML price')

    const after = await ledgerState(gw)
    t.equal(before.balance - after.balance, cost, 'wallet down by exactly the cost')
    t.equal(after.charged - before.charged, cost, 'one charge entry of that amount')
    t.equal(after.openHolds, 0, 'no hold left open')
    t.equal(after.held, 0n)
  })
}
