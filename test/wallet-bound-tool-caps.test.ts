// A hosted tool the provider runs per use was held for its cap — `max_tool_calls` on a response,
// `max_uses` on an Anthropic web search — or, when the request set none, for a default (10)
// the provider never heard of: without a cap OpenAI and Anthropic search as often as the model
// asks. A gpt-4o-mini response with web_search and no cap, searching 15 times over a 120,000-token
// context (16 passes, 1.92M input tokens), cost more than its hold; so did Claude searching 25
// times. Now the gateway forwards the cap its hold counted when the request sets none, so the
// provider cannot use the tool more often than was paid for. Through the official SDKs, on both
// stores; the mock honours the caps as the providers do.
import Anthropic from '@anthropic-ai/sdk'
import { OpenAI } from 'openai'
import t from 'tap'
import { startTestGateway, type Backend } from './helpers/gateway.js'
import { checkBounded } from './helpers/wallet-bound.js'

/** What the provider reads per pass over the context: most of gpt-4o-mini's 128,000-token window. */
const PASS = 120_000

for (const backend of ['sqlite', 'pg'] as Backend[]) {
  t.test(`responses web_search without max_tool_calls: the provider gets the cap the hold counted (${backend})`, async (t) => {
    const gw = await startTestGateway({ backend, credit: '10.00' })
    t.teardown(() => gw.close())
    const openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: gw.key, maxRetries: 0 })
    // The model asks for 15 searches; the provider reads the context once more after each one it makes.
    const answer = await openai.responses.create({ model: 'openai/gpt-4o-mini', input: 'search 15 things', tools: [{ type: 'web_search' }], max_output_tokens: 16 },
      { headers: { 'x-mock-tool-uses': '15', 'x-mock-input-tokens': String(11 * PASS) } })
    const sent = gw.mock.calls[0]?.json as { max_tool_calls?: unknown } | undefined
    t.equal(sent?.max_tool_calls, 10, 'the provider was told the hold\'s cap')
    t.equal(answer.output.filter((o) => o.type === 'web_search_call').length, 10, 'and searched no more')
    await checkBounded(t, [gw], 1)
  })

  t.test(`responses with max_tool_calls: forwarded as sent (${backend})`, async (t) => {
    const gw = await startTestGateway({ backend, credit: '10.00' })
    t.teardown(() => gw.close())
    const openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: gw.key, maxRetries: 0 })
    // max_tool_calls is newer than this SDK's types; the SDK sends the body as given.
    const body = { model: 'openai/gpt-4o-mini', input: 'x', tools: [{ type: 'web_search' as const }], max_tool_calls: 3, max_output_tokens: 16 }
    await openai.responses.create(body as OpenAI.Responses.ResponseCreateParamsNonStreaming, { headers: { 'x-mock-tool-uses': '15' } })
    t.equal((gw.mock.calls[0]?.json as { max_tool_calls?: unknown }).max_tool_calls, 3)
    t.equal(gw.mock.calls[0]?.body.toString().match(/max_tool_calls/g)?.length, 1, 'one member, the client\'s')
    await checkBounded(t, [gw], 1)
  })

  t.test(`messages web_search without max_uses: the provider gets the cap the hold counted (${backend})`, async (t) => {
    const gw = await startTestGateway({ backend, credit: '10.00' })
    t.teardown(() => gw.close())
    const anthropic = new Anthropic({ baseURL: gw.url, apiKey: gw.key, maxRetries: 0 })
    // The provider reads the context once, then once more after each search it makes (at most max_uses + 1 passes).
    const search = async (tool: Anthropic.Messages.WebSearchTool20250305): Promise<void> => {
      const passes = (tool.max_uses ?? 10) + 1
      await anthropic.messages.create({ model: 'anthropic/claude-haiku-3.5', max_tokens: 16, messages: [{ role: 'user', content: 'search 25 things' }], tools: [{ type: 'custom', name: 'f', input_schema: { type: 'object' } }, tool] },
        { headers: { 'x-mock-tool-uses': '25', 'x-mock-input-tokens': String(passes * 195_000) } })
    }
    await search({ type: 'web_search_20250305', name: 'web_search' })
    await search({ type: 'web_search_20250305', name: 'web_search', max_uses: 2 })
    const caps = gw.mock.calls.map((c) => (c.json as { tools?: Array<{ max_uses?: unknown }> }).tools?.map((x) => x.max_uses))
    t.same(caps, [[undefined, 10], [undefined, 2]], 'the uncapped search gets the hold\'s cap (the custom tool nothing); a capped one keeps its own')
    await checkBounded(t, [gw], 2)
  })
}
