// xAI bills reasoning tokens as output but reports them outside completion_tokens, where the
// request's max_tokens does not bound them. A hostile tenant asking for max_tokens: 1 while the
// model reasons 60,000 tokens must find that held, not posted as an overage: the hold counts each
// output count beside the limited one at the model's max_output_tokens. A burst on a small
// wallet ends at or above its floor, every charge within its hold. Through the OpenAI SDK against
// the faithful xAI mock, on both stores.
import { OpenAI } from 'openai'
import t from 'tap'
import { startProviderMockByName } from './fixtures/providers/index.js'
import { startTestGateway, type Backend } from './helpers/gateway.js'
import { SHIPPED } from './helpers/providers-cases.js'
import { checkBounded, refusalCode } from './helpers/wallet-bound.js'

const XAI = SHIPPED['xai']
if (XAI === undefined) throw new Error('xai is not a shipped provider')
const REASONING = 60_000
const BURST = 12

for (const backend of ['sqlite', 'pg'] as Backend[]) {
  t.test(`xai reasoning beyond max_tokens is held, never an overage (${backend})`, async (t) => {
    const mock = await startProviderMockByName('xai')
    t.teardown(() => mock.close())
    const env: Record<string, string> = { [XAI.baseUrlVar]: mock.url }
    if (XAI.keyVar !== null && mock.apiKey !== null) env[XAI.keyVar] = mock.apiKey
    // Room for a few holds of 1 + 65,536 output tokens at $0.50 / 1M (about 0.033 each), not the burst.
    const gw = await startTestGateway({ backend, env, credit: '0.10' })
    t.teardown(() => gw.close())
    const openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: gw.key, maxRetries: 0 })
    mock.setBehaviour({ reasoningTokens: REASONING, inputTokens: 20 })
    const results = await Promise.allSettled(Array.from({ length: BURST }, async (_, i) =>
      await openai.chat.completions.create({ model: XAI.model, max_tokens: 1, messages: [{ role: 'user', content: `think hard ${i}` }] })))
    const served = results.filter((r) => r.status === 'fulfilled').length
    const refused = results.flatMap((r) => r.status === 'rejected' ? [refusalCode(r.reason)] : [])
    t.ok(served >= 1, `some served (${served})`)
    t.same([...new Set(refused)], refused.length === 0 ? [] : ['BILLING_INSUFFICIENT_CREDITS'], 'the rest refused for credit, before the provider')
    t.equal(mock.calls.length, served, 'only the served reached xAI')
    const rows = await checkBounded(t, [gw], BURST)
    const billed = rows.filter((r) => r.billingStatus === 'BILLED')
    t.equal(billed.length, served, 'every served answer billed')
    t.ok(billed.every((r) => r.usageReported === true && (r.usage?.outputTokens ?? 0) >= REASONING), 'billed the reported reasoning as output')
  })
}
