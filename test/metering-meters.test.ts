import fc from 'fast-check'
import t from 'tap'
import { createMeter, type MeterInput } from '../plugins/concerns/metering/meter.js'
import { billsSomething } from '../plugins/foundation/operations/index.js'
import { emptyUsage, sanitize, tokenUsage, type Usage } from '../plugins/concerns/metering/usage.js'
import { countTokens } from 'gpt-tokenizer/encoding/o200k_base'
import { estimateUsage } from '../plugins/concerns/metering/estimate.js'
import { cut } from './helpers/chunks.js'
import { BUILTIN_OPERATIONS, meterOf } from './helpers/operations.js'

function run (input: MeterInput, chunks: readonly Buffer[]): Usage {
  const meter = createMeter(input)
  const onChunk = meter.onChunk // used detached, as relay's body.on('data', onChunk) does
  for (const c of chunks) onChunk(c)
  return meter.finish()
}

const sse = (events: ReadonlyArray<[string | null, unknown]>, eol = '\n'): string =>
  events.map(([name, data]) => `${name === null ? '' : `event: ${name}${eol}`}data: ${typeof data === 'string' ? data : JSON.stringify(data)}${eol}${eol}`).join('')

// 37 characters of prompt text: an estimate of ceil(37 / 4) = 10 input tokens.
const PROMPT = 'Hello there, how are you doing today?'
const chatRequest = { json: { model: 'openai/gpt-4o', stream: true, messages: [{ role: 'system', content: [{ type: 'text', text: '' }] }, { role: 'user', content: PROMPT }] } }

const chatJson = (prompt = '19', completion = '10', cached = '0'): string => `{
  "id": "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT",
  "object": "chat.completion",
  "created": 1741569952,
  "model": "gpt-4o-2024-08-06",
  "choices": [{ "index": 0, "message": { "role": "assistant", "content": "Hello! How can I assist you today? 😀", "refusal": null, "annotations": [] }, "logprobs": null, "finish_reason": "stop" }],
  "usage": { "prompt_tokens": ${prompt}, "completion_tokens": ${completion}, "total_tokens": 29,
    "prompt_tokens_details": { "cached_tokens": ${cached}, "audio_tokens": 0 },
    "completion_tokens_details": { "reasoning_tokens": 0, "audio_tokens": 0, "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0 } },
  "service_tier": "default",
  "system_fingerprint": "fp_fc9f1d7035"
}`

const chunk = (choices: unknown[], usage: unknown = null): Record<string, unknown> => ({
  id: 'chatcmpl-123', object: 'chat.completion.chunk', created: 1694268190, model: 'gpt-4o-mini-2024-07-18', system_fingerprint: 'fp_44709d6fcb', choices, usage
})
const chatSse = (usage: string): string => sse([
  [null, chunk([{ index: 0, delta: { role: 'assistant', content: '', refusal: null }, logprobs: null, finish_reason: null }])],
  [null, chunk([{ index: 0, delta: { content: 'Héllo' }, logprobs: null, finish_reason: null }])],
  [null, chunk([{ index: 0, delta: { content: ' wörld 🌍 日本' }, logprobs: null, finish_reason: null }])],
  [null, chunk([{ index: 0, delta: {}, logprobs: null, finish_reason: 'stop' }])],
  [null, `{"id":"chatcmpl-123","object":"chat.completion.chunk","created":1694268190,"model":"gpt-4o-mini-2024-07-18","system_fingerprint":"fp_44709d6fcb","choices":[],"usage":${usage}}`],
  [null, '[DONE]']
])
const CHAT_USAGE = '{"prompt_tokens":1200,"completion_tokens":9,"total_tokens":1209,"prompt_tokens_details":{"cached_tokens":1024,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}'

const responsesJson = (input = '36', output = '87'): string => JSON.stringify({
  id: 'resp_67ccd2bed1ec8190b14f964abc0542670bb6a6b452d3795b',
  object: 'response',
  created_at: 1741476542,
  status: 'completed',
  error: null,
  incomplete_details: null,
  instructions: 'Be brief.',
  max_output_tokens: null,
  model: 'gpt-4.1-2025-04-14',
  output: [{ type: 'message', id: 'msg_67ccd2bf17f0819081ff3bb2cf6508e60bb6a6b452d3795b', status: 'completed', role: 'assistant', content: [{ type: 'output_text', text: 'In a peaceful grove beneath a silver moon, a unicorn named Lumina discovered a hidden pool.', annotations: [] }] }],
  parallel_tool_calls: true,
  previous_response_id: null,
  reasoning: { effort: null, summary: null },
  store: true,
  temperature: 1.0,
  text: { format: { type: 'text' } },
  tool_choice: 'auto',
  tools: [],
  top_p: 1.0,
  truncation: 'disabled',
  usage: { input_tokens: '@IN', input_tokens_details: { cached_tokens: 0 }, output_tokens: '@OUT', output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 123 },
  user: null,
  metadata: {}
}).replace('"@IN"', input).replace('"@OUT"', output)

const responseObject = (status: string, usage: unknown): Record<string, unknown> => ({
  id: 'resp_1', object: 'response', created_at: 1741290958, status, error: null, model: 'gpt-4.1-2025-04-14', output: [], usage
})
const responsesSse = (usage: string, final = 'response.completed'): string => sse([
  ['response.created', { type: 'response.created', sequence_number: 0, response: responseObject('in_progress', null) }],
  ['response.in_progress', { type: 'response.in_progress', sequence_number: 1, response: responseObject('in_progress', null) }],
  ['response.output_item.added', { type: 'response.output_item.added', sequence_number: 2, output_index: 0, item: { id: 'msg_1', type: 'message', status: 'in_progress', content: [], role: 'assistant' } }],
  ['response.output_text.delta', { type: 'response.output_text.delta', sequence_number: 3, item_id: 'msg_1', output_index: 0, content_index: 0, delta: 'Hi ' }],
  ['response.output_text.delta', { type: 'response.output_text.delta', sequence_number: 4, item_id: 'msg_1', output_index: 0, content_index: 0, delta: 'there! ✨' }],
  ['response.output_text.done', { type: 'response.output_text.done', sequence_number: 5, item_id: 'msg_1', output_index: 0, content_index: 0, text: 'Hi there! ✨' }],
  [final, `{"type":"${final}","sequence_number":6,"response":${JSON.stringify(responseObject('completed', null)).replace('"usage":null', `"usage":${usage}`)}}`]
])
const RESPONSES_USAGE = '{"input_tokens":37,"input_tokens_details":{"cached_tokens":20},"output_tokens":11,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":48}'

const messagesJson = (input = '2095', output = '503', cacheRead = '1800'): string => `{"id":"msg_013Zva2CMHLNnXjNJJKqJ2EF","type":"message","role":"assistant","model":"claude-sonnet-4-20250514","content":[{"type":"text","text":"Hi! My name is Claude."}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":${input},"cache_creation_input_tokens":100,"cache_read_input_tokens":${cacheRead},"output_tokens":${output},"service_tier":"standard"}}`

const messagesSse = (input = '25', output = '15', withDelta = true): string => sse([
  ['message_start', `{"type":"message_start","message":{"id":"msg_1nZdL29xx5MUA1yADyHTEsnR8uuvGzszyY","type":"message","role":"assistant","content":[],"model":"claude-sonnet-4-20250514","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":${input},"cache_creation_input_tokens":0,"cache_read_input_tokens":5,"output_tokens":1}}}`],
  ['content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }],
  ['ping', { type: 'ping' }],
  ['content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Hello, Мир' } }],
  ['content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: '! 👋 How can I help?' } }],
  ['content_block_stop', { type: 'content_block_stop', index: 0 }],
  ...(withDelta ? [['message_delta', `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":${output}}}`] as [string, string]] : []),
  ['message_stop', { type: 'message_stop' }]
])

const genaiChunk = (text: string, usage: string, finish = false): string =>
  `{"candidates":[{"content":{"parts":[{"text":${JSON.stringify(text)}}],"role":"model"}${finish ? ',"finishReason":"STOP"' : ''},"index":0}],"usageMetadata":${usage},"modelVersion":"gemini-2.5-flash","responseId":"mockresp"}`
const genaiUsageText = (prompt = '8', candidates = '12', thoughts = '525'): string =>
  `{"promptTokenCount":${prompt},"candidatesTokenCount":${candidates},"totalTokenCount":545,"cachedContentTokenCount":4,"promptTokensDetails":[{"modality":"TEXT","tokenCount":8}],"thoughtsTokenCount":${thoughts}}`
const genaiJson = (usage = genaiUsageText()): string => genaiChunk('AI learns patterns from data, then predicts.', usage, true)
const genaiStreamParts: Array<[string, string]> = [
  ['The ', '{"promptTokenCount":10,"totalTokenCount":10}'],
  ['quick brown 🦊 ', '{"promptTokenCount":10,"candidatesTokenCount":4,"totalTokenCount":14}'],
  ['jumps.', '{"promptTokenCount":10,"candidatesTokenCount":7,"totalTokenCount":30,"thoughtsTokenCount":13}']
]
const genaiSse = genaiStreamParts.map(([text, usage], i) => `data: ${genaiChunk(text, usage, i === 2)}\r\n\r\n`).join('')
const genaiArray = `[${genaiStreamParts.map(([text, usage], i) => genaiChunk(text, usage, i === 2)).join(',\r\n')}]`

/** gemini-2.5-flash of gateway.yaml: an image costs at most its url_media_item hold, 15,780 tokens. */
const GENAI_FACTS = { upstreamModel: 'gemini-2.5-flash', mediaItemTokens: 15_780, contextTokens: 1_048_576 }
const genaiRequest = { json: { contents: [{ role: 'user', parts: [{ text: PROMPT }, { inline_data: { mime_type: 'image/png', data: 'iVBORw0KGgo'.repeat(100) } }] }] } }

interface Case { name: string, input: MeterInput, body: string, want: Partial<Usage> }

const cases: Case[] = [
  { name: 'chat.completions JSON', input: { meter: meterOf('chat.completions'), sse: false, request: chatRequest }, body: chatJson(), want: { inputTokens: 19, outputTokens: 10, cachedInputTokens: 0, reported: true } },
  { name: 'chat.completions SSE with the final usage chunk', input: { meter: meterOf('chat.completions'), sse: true, request: chatRequest }, body: chatSse(CHAT_USAGE), want: { inputTokens: 1200, outputTokens: 9, cachedInputTokens: 1024, reported: true } },
  // Gemini's OpenAI-compatible endpoint, asked for usage, sends the running usage on every chunk.
  { name: 'chat.completions SSE, every chunk with a running usage: the last stands', input: { meter: meterOf('chat.completions'), sse: true, request: chatRequest }, body: chatSse('{"prompt_tokens":1200,"completion_tokens":9,"total_tokens":1209}').replace(/"usage":null/g, '"usage":{"prompt_tokens":1200,"completion_tokens":1,"total_tokens":1201}'), want: { inputTokens: 1200, outputTokens: 9, reported: true } },
  { name: 'chat.completions SSE, CRLF', input: { meter: meterOf('chat.completions'), sse: true, request: chatRequest }, body: chatSse(CHAT_USAGE).replace(/\n/g, '\r\n'), want: { inputTokens: 1200, outputTokens: 9, reported: true } },
  { name: 'responses JSON', input: { meter: meterOf('responses'), sse: false, request: { json: { model: 'm', input: PROMPT } } }, body: responsesJson(), want: { inputTokens: 36, outputTokens: 87, cachedInputTokens: 0, reported: true } },
  { name: 'responses SSE response.completed', input: { meter: meterOf('responses'), sse: true, request: { json: { input: PROMPT } } }, body: responsesSse(RESPONSES_USAGE), want: { inputTokens: 37, outputTokens: 11, cachedInputTokens: 20, reported: true } },
  { name: 'responses SSE response.incomplete', input: { meter: meterOf('responses'), sse: true, request: { json: { input: PROMPT } } }, body: responsesSse(RESPONSES_USAGE, 'response.incomplete'), want: { inputTokens: 37, outputTokens: 11, reported: true } },
  { name: 'messages JSON (cache reads and writes are input)', input: { meter: meterOf('messages'), sse: false, request: { json: { messages: [{ role: 'user', content: PROMPT }] } } }, body: messagesJson(), want: { inputTokens: 2095 + 1800 + 100, outputTokens: 503, cachedInputTokens: 1800, reported: true } },
  { name: 'messages SSE message_start + message_delta', input: { meter: meterOf('messages'), sse: true, request: { json: { messages: [{ role: 'user', content: PROMPT }] } } }, body: messagesSse(), want: { inputTokens: 30, outputTokens: 15, cachedInputTokens: 5, reported: true } },
  { name: 'genai generateContent JSON (thoughts are output)', input: { meter: meterOf('genai.generateContent'), sse: false, request: genaiRequest }, body: genaiJson(), want: { inputTokens: 8, outputTokens: 537, cachedInputTokens: 4, reported: true } },
  { name: 'genai streamGenerateContent SSE (last usage wins)', input: { meter: meterOf('genai.streamGenerateContent'), sse: true, request: genaiRequest }, body: genaiSse, want: { inputTokens: 10, outputTokens: 20, reported: true } },
  { name: 'genai streamGenerateContent JSON array on an sse route', input: { meter: meterOf('genai.streamGenerateContent'), sse: true, request: genaiRequest }, body: genaiArray, want: { inputTokens: 10, outputTokens: 20, reported: true } }
]

for (const c of cases) {
  t.test(c.name, async (t) => {
    const body = Buffer.from(c.body)
    const whole = run(c.input, [body])
    t.match(whole, c.want)
    fc.assert(fc.property(fc.array(fc.nat(body.length), { maxLength: 30 }), (points) => {
      const split = run(c.input, cut(body, points))
      if (JSON.stringify(split) !== JSON.stringify(whole)) throw new Error(`${JSON.stringify(split)} !== ${JSON.stringify(whole)}`)
    }), { numRuns: 150 })
    t.pass('the same usage for 150 random splits')
    t.same(run(c.input, [...body].map((b) => Buffer.from([b]))), whole, 'one byte at a time')
  })
}

t.test('nothing reported: input estimated from the request, output one token per UTF-8 byte of the generated text', async (t) => {
  const noUsage = chatSse('null').replace(/,"usage":null/g, '')
  const input = estimateUsage('chat', chatRequest, undefined, 0).inputTokens
  t.ok(input >= Buffer.byteLength(PROMPT), 'without a tokenizer for the model, the prompt counts at least one token per byte')
  const u = run({ meter: meterOf('chat.completions'), sse: true, request: chatRequest }, [Buffer.from(noUsage)])
  t.same(u, { ...emptyUsage(), inputTokens: input, outputTokens: Buffer.byteLength('Héllo' + ' wörld 🌍 日本'), reported: false })
  const json = run({ meter: meterOf('chat.completions'), sse: false, request: chatRequest }, [Buffer.from(chatJson().replace(/"usage": \{[^]*?\} \},/, ''))])
  t.same(json, { ...emptyUsage(), inputTokens: input, outputTokens: Buffer.byteLength('Hello! How can I assist you today? 😀'), reported: false })
  const gpt = run({ meter: meterOf('chat.completions'), sse: true, request: chatRequest, estimate: { upstreamModel: 'gpt-4o' } }, [Buffer.from(noUsage)])
  t.ok(gpt.inputTokens < input, `gpt-4o's tokenizer counts fewer tokens (${gpt.inputTokens}) than the byte bound (${input})`)
  t.ok(gpt.inputTokens > countTokens(PROMPT), 'but more than the prompt text alone (framing)')
})

t.test('an interrupted messages stream: input as reported, output estimated', async (t) => {
  const u = run({ meter: meterOf('messages'), sse: true, request: { json: { messages: [{ role: 'user', content: PROMPT }] } } }, [Buffer.from(messagesSse('25', '15', false))])
  t.same(u, { ...emptyUsage(), inputTokens: 30, cachedInputTokens: 5, outputTokens: Buffer.byteLength('Hello, Мир' + '! 👋 How can I help?'), reported: false })
})

t.test('message_delta counts are cumulative, and newer streams repeat the input there', async (t) => {
  const body = messagesSse('25', '15') + sse([['message_delta', '{"type":"message_delta","delta":{},"usage":{"input_tokens":40,"cache_read_input_tokens":0,"output_tokens":22}}']])
  t.match(run({ meter: meterOf('messages'), sse: true, request: {} }, [Buffer.from(body)]), { inputTokens: 40, cachedInputTokens: 0, outputTokens: 22, reported: true })
})

const HOSTILE = ['-5', '1e15', '"19"', '19.5', 'NaN', '-0.5', '1e400', '{"n":1}', '[3]', 'true', '9007199254740993']

t.test('hostile numbers are rejected, never clamped: the usage falls back to estimates', async (t) => {
  for (const bad of HOSTILE) {
    const families: Array<[string, MeterInput, string]> = [
      ['chat json prompt', { meter: meterOf('chat.completions'), sse: false, request: chatRequest }, chatJson(bad)],
      ['chat json completion', { meter: meterOf('chat.completions'), sse: false, request: chatRequest }, chatJson('19', bad)],
      ['chat sse', { meter: meterOf('chat.completions'), sse: true, request: chatRequest }, chatSse(CHAT_USAGE.replace('"completion_tokens":9', `"completion_tokens":${bad}`))],
      ['responses json', { meter: meterOf('responses'), sse: false, request: { json: { input: PROMPT } } }, responsesJson('36', bad)],
      ['responses sse', { meter: meterOf('responses'), sse: true, request: { json: { input: PROMPT } } }, responsesSse(RESPONSES_USAGE.replace('"input_tokens":37', `"input_tokens":${bad}`))],
      ['messages json', { meter: meterOf('messages'), sse: false, request: { json: { messages: [{ role: 'user', content: PROMPT }] } } }, messagesJson(bad)],
      ['messages json cache read', { meter: meterOf('messages'), sse: false, request: { json: { messages: [{ role: 'user', content: PROMPT }] } } }, messagesJson('2095', '503', bad)],
      ['messages sse', { meter: meterOf('messages'), sse: true, request: { json: { messages: [{ role: 'user', content: PROMPT }] } } }, messagesSse('25', bad)],
      ['genai json', { meter: meterOf('genai.generateContent'), sse: false, request: genaiRequest, estimate: GENAI_FACTS }, genaiJson(genaiUsageText(bad))],
      ['genai json thoughts', { meter: meterOf('genai.generateContent'), sse: false, request: genaiRequest, estimate: GENAI_FACTS }, genaiJson(genaiUsageText('8', '12', bad))]
    ]
    for (const [name, input, body] of families) {
      const u = run(input, [Buffer.from(body)])
      const absurd = Object.entries(u).filter(([, v]) => typeof v === 'number' && !(Number.isSafeInteger(v) && v >= 0 && v < 1e6))
      t.ok(u.reported === false && absurd.length === 0, `${name} with ${bad}: estimated, sane`, { usage: u })
    }
  }
})

t.test('a cached count above the input count is rejected, not priced at the cached rate', async (t) => {
  const u = run({ meter: meterOf('chat.completions'), sse: false, request: chatRequest }, [Buffer.from(chatJson('19', '10', '500'))])
  t.match(u, { inputTokens: 19, outputTokens: 10, cachedInputTokens: 0, reported: false })
})

t.test('sanitize', async (t) => {
  t.same(sanitize({ inputTokens: 5, outputTokens: -1, images: 2.5, audioSeconds: 1.25, characters: '7', calls: Number.NaN, jobs: null }), {
    counts: { inputTokens: 5, audioSeconds: 1.25 },
    rejected: ['outputTokens', 'images', 'characters', 'calls']
  })
  t.same(sanitize({ inputTokens: 1e9 }).counts, { inputTokens: 1e9 })
  t.same(sanitize({ inputTokens: 1e9 + 1 }).rejected, ['inputTokens'])
  t.same(sanitize({ inputTokens: Number.POSITIVE_INFINITY, audioSeconds: -0.001 }).rejected, ['inputTokens', 'audioSeconds'])
  t.same(tokenUsage({ inputTokens: -0 }, { inputTokens: 3, outputTokens: 4 }), { ...emptyUsage(), inputTokens: 0, outputTokens: 4, reported: false })
})

t.test('an upstream error status bills nothing; finish() is stable; the meter ignores late chunks', async (t) => {
  const err = createMeter({ meter: meterOf('chat.completions'), sse: false, request: chatRequest, status: 429 })
  err.onChunk(Buffer.from('{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}'))
  t.same(err.finish(), emptyUsage())
  const m = createMeter({ meter: meterOf('chat.completions'), sse: false, request: chatRequest, status: 200 })
  m.onChunk(Buffer.from(chatJson()))
  const first = m.finish()
  m.onChunk(Buffer.from('garbage'))
  t.same(m.finish(), first)
  first.inputTokens = 1e6
  t.equal(m.finish().inputTokens, 19, 'callers get their own copy')
})

t.test('unmetered operations (job polls, content downloads) bill nothing', async (t) => {
  for (const operation of ['videos.get', 'videos.content', 'jobs.get']) {
    t.same(run({ meter: meterOf(operation), sse: false, request: {} }, [Buffer.from('{"id":"video_1","status":"completed"}')]), emptyUsage(), operation)
  }
  t.same(run({ meter: { kind: 'none' }, sse: false, request: {} }, [Buffer.from('{"id":"video_1","status":"completed"}')]), emptyUsage(), 'meter kind none')
})

t.test('meter kind call: one call per 2xx answer, whatever its body; nothing for an error answer', async (t) => {
  t.same(run({ meter: { kind: 'call' }, sse: false, request: {}, status: 200 }, [Buffer.from('{"anything":true}')]), { ...emptyUsage(), calls: 1, reported: true })
  t.same(run({ meter: { kind: 'call' }, sse: false, request: {}, status: 502 }, [Buffer.from('{"error":{}}')]), emptyUsage())
})

t.test('property: garbage never throws and never yields negative or absurd usage', async (t) => {
  const operations = BUILTIN_OPERATIONS.list().filter((op) => billsSomething(op.meter)).map((op) => op.name)
  const body = fc.oneof(
    fc.uint8Array({ maxLength: 400 }).map((b) => Buffer.from(b)),
    fc.string({ unit: 'binary', maxLength: 200 }).map((s) => Buffer.from(`data: ${s}\n\n{"usage":${s}`)),
    fc.jsonValue().map((v) => Buffer.from(JSON.stringify(v))),
    fc.jsonValue().map((v) => Buffer.from(`data: ${JSON.stringify({ usage: v, usageMetadata: v, choices: [], type: 'response.completed', response: { usage: v } })}\n\n`))
  )
  fc.assert(fc.property(fc.constantFrom(...operations), fc.boolean(), body, fc.array(fc.nat(), { maxLength: 8 }), (operation, isSse, buf, points) => {
    const u = run({ meter: meterOf(operation), sse: isSse, request: { json: { input: 'abc', n: 2 }, audioSeconds: 3 } }, cut(buf, points.map((p) => p % (buf.length + 1))))
    for (const [k, v] of Object.entries(u)) {
      if (k === 'reported') continue
      if (typeof v !== 'number' || !Number.isFinite(v) || v < 0 || v > 1e9) throw new Error(`${operation}: ${k}=${String(v)}`)
    }
    if (u.cachedInputTokens > u.inputTokens) throw new Error('cached above input')
  }), { numRuns: 1000 })
  t.pass('1000 runs')
})
