// A provider added by YAML alone (docs/providers.md, "Adding a provider"): gateway.yaml gains a
// provider, its pool and a model whose operation's `meter` says how the provider reports usage,
// and nothing else changes. `check` passes it, the OpenAI SDK reaches it through the gateway, and
// its answers are billed exactly from the provider's own usage. The new provider's upstream is
// the xAI mock, whose usage puts reasoning beside completion_tokens: without the YAML's meter
// line the bill would be wrong, so the test shows configuration, not code, reading it.
/* eslint-disable no-template-curly-in-string -- these strings are ${VAR} references for the config loader to expand */
import { OpenAI } from 'openai'
import t from 'tap'
import { checkCommand, type CommandIo } from '../plugins/apps/gateway/check-command.js'
import { startXaiMock } from './fixtures/providers/index.js'
import { expectedCost, ledgerState, priceOf, settledRow } from './helpers/billing.js'
import { startTestGateway } from './helpers/gateway.js'
import { reportedUnits } from './helpers/providers-cases.js'
import { writeTestConfig } from './helpers/test-config.js'

const MODEL = 'newco/thinker-1'

const cfg = writeTestConfig((c) => {
  c.providers.newco = {
    base_url: '${NEWCO_BASE_URL:-https://api.newco.invalid}',
    headers: { authorization: 'Bearer ${NEWCO_API_KEY:-}' },
    allow_request_headers: ['accept'],
    allow_response_headers: ['content-type', 'content-length', 'retry-after'],
    allow_query_params: []
  }
  c.pools.newco = [{ provider: 'newco', weight: 1 }]
  c.models.push({
    id: MODEL,
    status: 'active',
    pool: 'newco',
    upstream_model: 'thinker-1-2026',
    operations: {
      'chat.completions': {
        path: '/v1/chat/completions',
        meter: { stream_usage: 'when_asked', usage: { output_tokens: ['completion_tokens', 'completion_tokens_details.reasoning_tokens'] } }
      }
    },
    pricing: { unit: 'token', input: '1.10', cached_input: '0.30', output: '4.40', per: 1000000, features: {} },
    context_window: 200000,
    max_output_tokens: 32000,
    service_tiers: ['auto', 'default']
  })
})
t.teardown(cfg.remove)

const mock = await startXaiMock()
t.teardown(() => mock.close())
const env = { NEWCO_BASE_URL: mock.url, NEWCO_API_KEY: mock.apiKey ?? '' }

t.test('check passes the YAML with the new provider', async (t) => {
  let out = ''
  const io: CommandIo = { env, stdout: { write: (s: string) => { out += s } }, stderr: { write: (s: string) => { out += s } } }
  t.equal(await checkCommand([cfg.file], io), 0, out)
  t.notMatch(out, /warning/, 'not even a warning')
})

t.test('the new provider serves and bills through the OpenAI SDK, with no code written for it', async (t) => {
  const gw = await startTestGateway({ configFile: cfg.file, env })
  t.teardown(() => gw.close())
  const openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: gw.key, maxRetries: 0 })
  const price = priceOf(MODEL, gw.config as unknown as Parameters<typeof priceOf>[1])
  const before = await ledgerState(gw)

  mock.setBehaviour({ reasoningTokens: 40, cachedTokens: 6, inputTokens: 30 })
  const plain = await openai.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'think about the new provider' }] }).withResponse()
  t.equal(plain.response.headers.get('x-gateway-model'), MODEL)
  t.ok((plain.data.choices[0]?.message.content ?? '').length > 0, 'the provider\'s answer')
  const first = mock.calls[0]
  t.equal(first?.path, '/v1/chat/completions', 'the path the YAML names')
  t.equal(first?.headers.authorization, `Bearer ${mock.apiKey ?? ''}`, 'the credential from ${NEWCO_API_KEY}')
  t.equal((first?.json as { model?: string } | undefined)?.model, 'thinker-1-2026', 'the upstream_model')
  const plainRow = await settledRow(gw, plain.response.headers.get('x-request-id') ?? '')
  const plainUnits = reportedUnits('xai', first?.usage ?? {})
  t.equal(plainUnits.outputTokens > (first?.usage?.completion_tokens as number), true, 'the reasoning tokens are outside completion_tokens on this wire')
  t.equal(plainRow.usageReported, true, 'the usage is the provider\'s, not an estimate')
  t.equal(plainRow.cost, expectedCost(price, plainUnits), 'billed: (completion + reasoning) output, cached input at cached_input, the rest at input')

  const { data: stream, response } = await openai.chat.completions.create({ model: MODEL, stream: true, messages: [{ role: 'user', content: 'and now stream it' }] }).withResponse()
  let text = ''
  for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? ''
  t.ok(text.length > 0, 'the streamed text')
  const second = mock.calls[1]
  t.same((second?.json as { stream_options?: unknown } | undefined)?.stream_options, { include_usage: true }, 'stream_usage: when_asked — the gateway asked for the usage chunk')
  const streamRow = await settledRow(gw, response.headers.get('x-request-id') ?? '')
  t.equal(streamRow.billingStatus, 'BILLED')
  t.equal(streamRow.usageReported, true)
  t.equal(streamRow.cost, expectedCost(price, reportedUnits('xai', second?.usage ?? {})), 'the stream billed from its usage chunk')

  const after = await ledgerState(gw)
  t.equal(after.charged - before.charged, (plainRow.cost ?? 0n) + (streamRow.cost ?? 0n), 'the ledger charged exactly the two bills')
  t.equal(after.openHolds, 0)
})

t.test('without the YAML entry the model does not exist', async (t) => {
  const plain = await startTestGateway({ env })
  t.teardown(() => plain.close())
  const res = await fetch(`${plain.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${plain.key}` },
    body: JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: 'hi' }] })
  })
  t.equal(res.status, 404)
  t.equal(res.headers.get('x-gateway-error-code'), 'MODEL_NOT_FOUND')
})
