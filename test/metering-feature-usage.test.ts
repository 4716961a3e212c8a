// Feature use read from the provider's answer (plugins/concerns/metering/feature-usage.ts): the report
// each built-in feature declares, in JSON and in streams, whatever the chunking; the declared
// worst case where the answer does not say, is cut, or says something unbelievable; and no
// `features` at all on a request that used none (the fast path).
import t from 'tap'
import fc from 'fast-check'
import { createMeter, type MeterInput } from '../plugins/concerns/metering/index.js'
import type { MeteredFeature } from '../plugins/concerns/metering/feature-usage.js'
import { meterOf, opOf } from './helpers/operations.js'
import type { Usage } from '../plugins/foundation/shapes/index.js'

/** The built-in feature `name` of `op` as the gateway hands it to the meter, at `worstUses`. */
function feature (op: string, name: string, worstUses: number): MeteredFeature {
  const f = opOf(op).features.byName.get(name)
  if (f === undefined) throw new Error(`${op} declares no ${name}`)
  return { name, charge: f.charge, report: f.report, worstUses }
}

function meter (op: string, features: readonly MeteredFeature[], body: string, chunks = 1, sse = false): Usage {
  const input: MeterInput = { meter: meterOf(op), sse, request: { json: {} }, ...(features.length > 0 ? { features } : {}) }
  const m = createMeter(input)
  const bytes = Buffer.from(body)
  for (let i = 0; i < chunks; i++) m.onChunk(bytes.subarray(Math.floor(i * bytes.length / chunks), Math.floor((i + 1) * bytes.length / chunks)))
  return m.finish()
}

const sse = (events: Array<[string | null, unknown]>): string => events.map(([name, data]) => `${name === null ? '' : `event: ${name}\n`}data: ${JSON.stringify(data)}\n\n`).join('')

const responsesAnswer = (searches: number): Record<string, unknown> => ({
  id: 'resp_1',
  object: 'response',
  status: 'completed',
  service_tier: 'default',
  output: [...Array.from({ length: searches }, (_, i) => ({ id: `ws_${i}`, type: 'web_search_call', status: 'completed' })), { id: 'msg', type: 'message', content: [{ type: 'output_text', text: 'hi' }] }],
  usage: { input_tokens: 10, output_tokens: 2, input_tokens_details: { cached_tokens: 0 } }
})

t.test('responses: web searches counted from output[], JSON and stream', async (t) => {
  const web = feature('responses', 'web_search', 10)
  t.same(meter('responses', [web], JSON.stringify(responsesAnswer(3))).features, { web_search: { charge: 'per_use', uses: 3, reported: true } })
  t.same(meter('responses', [web], JSON.stringify(responsesAnswer(0))).features, { web_search: { charge: 'per_use', uses: 0, reported: true } }, 'no search: none charged')
  const stream = sse([
    ['response.created', { type: 'response.created', response: { ...responsesAnswer(0), status: 'in_progress', usage: null } }],
    ['response.output_text.delta', { type: 'response.output_text.delta', delta: 'hi' }],
    ['response.completed', { type: 'response.completed', response: responsesAnswer(2) }]
  ])
  t.same(meter('responses', [web], stream, 5).features, { web_search: { charge: 'per_use', uses: 2, reported: true } }, 'the final response lists the searches')
  const cut = stream.slice(0, stream.indexOf('event: response.completed'))
  t.same(meter('responses', [web], cut, 3).features, { web_search: { charge: 'per_use', uses: 10, reported: false } }, 'a cut stream: the cap the hold counted')
})

t.test('messages: server_tool_use.web_search_requests, JSON and stream; unbelievable counts are not reports', async (t) => {
  const web = feature('messages', 'web_search', 20)
  const message = (usage: Record<string, unknown>): string => JSON.stringify({ id: 'msg', type: 'message', role: 'assistant', content: [{ type: 'text', text: 'hi' }], usage: { input_tokens: 5, output_tokens: 1, ...usage } })
  t.same(meter('messages', [web], message({ server_tool_use: { web_search_requests: 5 } })).features, { web_search: { charge: 'per_use', uses: 5, reported: true } })
  t.same(meter('messages', [web], message({})).features, { web_search: { charge: 'per_use', uses: 0, reported: true } }, 'a complete answer without the count used none')
  for (const hostile of [-1, 2.5, 1e12, 'many']) {
    t.same(meter('messages', [web], message({ server_tool_use: { web_search_requests: hostile } })).features, { web_search: { charge: 'per_use', uses: 20, reported: false } }, `${JSON.stringify(hostile)}: the worst case`)
  }
  const stream = sse([
    ['message_start', { type: 'message_start', message: { id: 'm', type: 'message', role: 'assistant', content: [], usage: { input_tokens: 5, output_tokens: 1 } } }],
    ['content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'hi' } }],
    ['message_delta', { type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 3, server_tool_use: { web_search_requests: 4 } } }],
    ['message_stop', { type: 'message_stop' }]
  ])
  t.same(meter('messages', [web], stream, 7).features, { web_search: { charge: 'per_use', uses: 4, reported: true } }, 'the running total of message_delta')
})

t.test('genai: grounding metadata on a candidate is one grounded prompt', async (t) => {
  const search = feature('genai.generateContent', 'google_search', 1)
  const answer = (grounded: boolean): Record<string, unknown> => ({ candidates: [{ content: { parts: [{ text: 'hi' }] }, finishReason: 'STOP', ...(grounded ? { groundingMetadata: { webSearchQueries: ['q'] } } : {}) }], usageMetadata: { promptTokenCount: 4, candidatesTokenCount: 1 } })
  t.same(meter('genai.generateContent', [search], JSON.stringify(answer(true))).features, { google_search: { charge: 'per_call', uses: 1, reported: true } })
  t.same(meter('genai.generateContent', [search], JSON.stringify(answer(false))).features, { google_search: { charge: 'per_call', uses: 0, reported: true } })
  const chunks = sse([[null, { ...answer(false), candidates: [{ content: { parts: [{ text: 'h' }] } }] }], [null, answer(true)]])
  t.same(meter('genai.streamGenerateContent', [search], chunks, 4, true).features, { google_search: { charge: 'per_call', uses: 1, reported: true } }, 'any chunk of a stream')
  t.same(meter('genai.streamGenerateContent', [search], JSON.stringify([answer(false), answer(true)]), 3).features, { google_search: { charge: 'per_call', uses: 1, reported: true } }, 'a JSON-array stream')
})

t.test('chat: the tier the answer states decides the multiplier', async (t) => {
  const priority = feature('chat.completions', 'priority_tier', 1)
  const answer = (tier: string): string => JSON.stringify({ id: 'c', object: 'chat.completion', service_tier: tier, choices: [{ index: 0, message: { role: 'assistant', content: 'hi' } }], usage: { prompt_tokens: 3, completion_tokens: 1 } })
  t.same(meter('chat.completions', [priority], answer('priority')).features, { priority_tier: { charge: 'multiplier', uses: 1, reported: true } })
  t.same(meter('chat.completions', [priority], answer('default')).features, { priority_tier: { charge: 'multiplier', uses: 0, reported: true } }, 'served at the default tier: no multiplier')
  const noUsage = JSON.stringify({ id: 'c', service_tier: 'default', choices: [] })
  t.same(meter('chat.completions', [priority], noUsage).features, { priority_tier: { charge: 'multiplier', uses: 1, reported: false } }, 'no usage reported: the worst case')
})

t.test('a request without features keeps the fast path: no features on its usage', async (t) => {
  t.equal(meter('responses', [], JSON.stringify(responsesAnswer(3))).features, undefined)
  t.equal(meter('messages', [], sse([['message_start', { type: 'message_start', message: { usage: { input_tokens: 1, output_tokens: 1 } } }]])).features, undefined)
})

t.test('a meter that cannot read features charges their worst case', async (t) => {
  const f: MeteredFeature = { name: 'x', charge: 'per_use', report: null, worstUses: 7 }
  t.same(meter('images.generations', [f], JSON.stringify({ data: [{ b64_json: 'AAAA' }] })).features, { x: { charge: 'per_use', uses: 7, reported: false } })
  t.same(meter('responses', [f], JSON.stringify(responsesAnswer(1))).features, { x: { charge: 'per_use', uses: 7, reported: false } }, 'no report declared: the worst case')
})

t.test('property: any chunking of an answer reads the same feature use', async () => {
  const web = feature('responses', 'web_search', 10)
  const tier = feature('responses', 'priority_tier', 1)
  fc.assert(fc.property(fc.integer({ min: 0, max: 6 }), fc.boolean(), fc.integer({ min: 1, max: 40 }), fc.boolean(), (searches, priority, chunks, stream) => {
    const answer = { ...responsesAnswer(searches), service_tier: priority ? 'priority' : 'default' }
    const body = stream ? sse([['response.completed', { type: 'response.completed', response: answer }]]) : JSON.stringify(answer)
    const got = meter('responses', [web, tier], body, chunks).features
    return got?.web_search?.uses === searches && got.priority_tier?.uses === (priority ? 1 : 0) && got.web_search.reported && got.priority_tier.reported
  }), { numRuns: 300 })
})
