// A model operation's `meter.usage` (gateway.yaml; docs/providers.md): the chat meter reads each
// count where the provider's usage object holds it, sums a list, and falls back to the estimate
// when the first path is missing, in a JSON answer and in a stream alike.
import t from 'tap'
import { createMeter, type MeterInput } from '../plugins/concerns/metering/meter.js'
import type { Usage } from '../plugins/concerns/metering/usage.js'
import { opOf } from './helpers/operations.js'
import type { UsagePaths } from '../plugins/foundation/shapes/index.js'

const split = (paths: string[]): string[][] => paths.map((p) => p.split('.'))

function run (usagePaths: UsagePaths | undefined, body: string, sse: boolean): Usage {
  const input: MeterInput = {
    meter: opOf('chat.completions').meter,
    sse,
    request: { json: { model: 'x/y', messages: [{ role: 'user', content: 'Hello there, how are you doing today?' }] } },
    ...(usagePaths === undefined ? {} : { usagePaths })
  }
  const meter = createMeter(input)
  meter.onChunk(Buffer.from(body))
  return meter.finish()
}

const answer = (usage: unknown): string => JSON.stringify({
  id: 'c1', object: 'chat.completion', created: 1, model: 'm', choices: [{ index: 0, message: { role: 'assistant', content: 'hi there' }, finish_reason: 'stop' }], usage
})
const stream = (usage: unknown): string => [
  { id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta: { content: 'hi there' }, finish_reason: null }] },
  { id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta: {}, finish_reason: 'stop' }], usage }
].map((c) => `data: ${JSON.stringify(c)}\n\n`).join('') + 'data: [DONE]\n\n'

// DeepSeek's documented cache field, without OpenAI's.
const DEEPSEEK = { prompt_tokens: 100, completion_tokens: 20, total_tokens: 120, prompt_cache_hit_tokens: 64, prompt_cache_miss_tokens: 36 }
// xAI: reasoning billed as output but reported beside completion_tokens.
const XAI = { prompt_tokens: 50, completion_tokens: 2, total_tokens: 177, completion_tokens_details: { reasoning_tokens: 125 }, prompt_tokens_details: { cached_tokens: 10 } }

for (const sse of [false, true]) {
  const body = (u: unknown): string => (sse ? stream(u) : answer(u))
  const kind = sse ? 'stream' : 'JSON'

  t.test(`${kind}: a cache field of the provider's own`, async (t) => {
    t.equal(run(undefined, body(DEEPSEEK), sse).cachedInputTokens, 0, 'the chat dialect alone does not see it')
    const u = run({ cachedInputTokens: split(['prompt_cache_hit_tokens']) }, body(DEEPSEEK), sse)
    t.match(u, { inputTokens: 100, outputTokens: 20, cachedInputTokens: 64, reported: true }, 'read where meter.usage says')
  })

  t.test(`${kind}: a list is summed`, async (t) => {
    t.equal(run(undefined, body(XAI), sse).outputTokens, 2, 'completion_tokens alone')
    const u = run({ outputTokens: split(['completion_tokens', 'completion_tokens_details.reasoning_tokens']) }, body(XAI), sse)
    t.match(u, { inputTokens: 50, outputTokens: 127, cachedInputTokens: 10, reported: true }, 'output is completion + reasoning; the counts not named read as the dialect reads them')
    const absent = run({ outputTokens: split(['completion_tokens', 'completion_tokens_details.reasoning_tokens']) }, body({ prompt_tokens: 50, completion_tokens: 2 }), sse)
    t.match(absent, { outputTokens: 2, reported: true }, 'a later path that is absent counts 0')
  })

  t.test(`${kind}: a first path missing or hostile is not a report`, async (t) => {
    const missing = run({ outputTokens: split(['output_count']) }, body(XAI), sse)
    t.equal(missing.reported, false, 'the output count is estimated, marked so')
    t.equal(missing.inputTokens, 50, 'the input count still the provider\'s')
    const hostile = run({ outputTokens: split(['completion_tokens', 'completion_tokens_details.reasoning_tokens']) }, body({ ...XAI, completion_tokens_details: { reasoning_tokens: -5 } }), sse)
    t.equal(hostile.reported, false, 'a negative part makes the sum unbelievable: estimated')
  })
}
