// The input estimate of a request whose usage did not come never counts fewer tokens than the
// provider bills. For OpenAI models the reference is gpt-tokenizer's own count of a chat request
// (messages with OpenAI's per-message overhead, function definitions rendered the way OpenAI
// renders them, each with its overhead): an implementation independent of ours. For the other
// providers the reference is the byte bound the estimate promises (every text counted at least
// one token per UTF-8 byte, plus Anthropic's tool prompt). Media, references and hosted tools
// are priced at their bound or make the estimate the model's context window.
import fc from 'fast-check'
import t from 'tap'
import { countChatCompletionTokens, countTokens } from 'gpt-tokenizer/model/gpt-4o'
import { estimateInputTokens, type EstimateFacts } from '../plugins/concerns/metering/input-estimate.js'
import { estimateUsage, mayReasonUnseen } from '../plugins/concerns/metering/estimate.js'
import { encodingsFor, tokenCounter, TOKENIZE_BUDGET_BYTES } from '../plugins/concerns/metering/tokenizers.js'
import { utf8Bytes } from '../plugins/concerns/metering/utf8.js'

const CONTEXT = 128_000
const GPT4O: EstimateFacts = { upstreamModel: 'gpt-4o', mediaItemTokens: 1480, contextTokens: CONTEXT }

const estimate = (json: Record<string, unknown>, dialect: 'chat' | 'responses' | 'messages' | 'genai', facts: EstimateFacts = GPT4O): number =>
  estimateInputTokens(json, undefined, dialect, tokenCounter(facts.upstreamModel), facts)

// Text as clients send it: words, unicode of every plane, long runs that cross tokenizer pieces.
const word = fc.oneof(
  fc.string({ unit: 'grapheme', minLength: 1, maxLength: 12 }),
  fc.constantFrom('the', ' weather', 'in', 'Paris', '東京', 'émigré', '🌍', '\n', '  ', '{"a":1}', '<|endoftext|>', 'x'.repeat(300))
)
const text = fc.array(word, { maxLength: 30 }).map((ws) => ws.join(' '))
const identifier = fc.stringMatching(/^[a-z][a-z0-9_]{0,20}$/)

type Schema = Record<string, unknown>
const leaf: fc.Arbitrary<Schema> = fc.oneof(
  fc.record({ type: fc.constant('string'), description: text, enum: fc.array(identifier, { minLength: 1, maxLength: 5 }) }, { requiredKeys: ['type'] }),
  fc.record({ type: fc.constantFrom('number', 'integer'), description: text, minimum: fc.integer(), maximum: fc.integer() }, { requiredKeys: ['type'] }),
  fc.record({ type: fc.constant('boolean'), description: text }, { requiredKeys: ['type'] }),
  fc.record({ type: fc.constant('array'), description: text, items: fc.record({ type: fc.constant('string') }) }, { requiredKeys: ['type', 'items'] })
)
const properties = (inner: fc.Arbitrary<Schema>): fc.Arbitrary<Record<string, Schema>> => fc.dictionary(identifier, inner, { maxKeys: 5 })
const schema: fc.Arbitrary<Schema> = properties(fc.oneof(
  leaf,
  properties(leaf).map((p) => ({ type: 'object', properties: p, required: Object.keys(p).slice(0, 1) }))
)).map((p) => ({ type: 'object', properties: p, required: Object.keys(p).slice(0, 2) }))
const tool = fc.record({ name: identifier, description: text, parameters: schema }, { requiredKeys: ['name', 'parameters'] })

const message = fc.record({
  role: fc.constantFrom('system', 'user', 'assistant'),
  content: text,
  name: fc.option(identifier, { nil: undefined })
}).map((m) => m.name === undefined ? { role: m.role, content: m.content } : m)

interface Fn { name: string, description?: string, parameters: Schema }
/** gpt-tokenizer's count of the same request, as OpenAI counts it. */
function reference (messages: Array<{ role: string, content: string, name?: string }>, functions: Fn[]): number {
  const count = countChatCompletionTokens as NonNullable<typeof countChatCompletionTokens>
  // Its types cover the JSON-schema subset OpenAI renders; the generated schemas stay in it.
  return count(functions.length > 0 ? { messages, functions: functions as never } : { messages })
}

t.test('property: chat completions on gpt-4o: estimate ≥ OpenAI\'s count (messages, names, tools and their JSON schemas)', async (t) => {
  let margin = Number.POSITIVE_INFINITY
  fc.assert(fc.property(fc.array(message, { minLength: 1, maxLength: 6 }), fc.array(tool, { maxLength: 4 }), (messages, tools) => {
    const body: Record<string, unknown> = { model: 'openai/gpt-4o', messages }
    if (tools.length > 0) body.tools = tools.map((f) => ({ type: 'function', function: f }))
    const got = estimate(body, 'chat')
    const want = reference(messages, tools)
    margin = Math.min(margin, got / Math.max(1, want))
    if (got < want) throw new Error(`estimate ${got} < OpenAI's ${want}: ${JSON.stringify(body)}`)
  }), { numRuns: 400 })
  t.pass(`400 random requests; the estimate was at least ${margin.toFixed(2)} × the reference`)
})

t.test('property: responses on gpt-4o: instructions, input items and flat function tools all counted', async (t) => {
  fc.assert(fc.property(text, fc.array(message, { minLength: 1, maxLength: 5 }), fc.array(tool, { maxLength: 3 }), (instructions, input, tools) => {
    const body = { model: 'gpt-4o', instructions, input, tools: tools.map((f) => ({ type: 'function', ...f })) }
    const got = estimate(body, 'responses')
    const want = reference([{ role: 'system', content: instructions }, ...input], tools)
    if (got < want) throw new Error(`estimate ${got} < OpenAI's ${want}: ${JSON.stringify(body)}`)
  }), { numRuns: 200 })
  t.pass('200 random requests')
})

/** Every text a provider reads in a body, in UTF-8 bytes (the byte bound's reference). */
function textBytes (value: unknown): number {
  if (typeof value === 'string') return utf8Bytes(value)
  if (Array.isArray(value)) return value.reduce((n: number, v) => n + textBytes(v), 0)
  if (typeof value === 'object' && value !== null) return Object.entries(value).reduce((n, [k, v]) => n + utf8Bytes(k) + textBytes(v), 0)
  return utf8Bytes(String(value))
}

t.test('property: messages and genai (no public tokenizer): estimate ≥ one token per byte of every text, plus the tool prompt', async (t) => {
  const facts: EstimateFacts = { upstreamModel: 'claude-sonnet-4-20250514', mediaItemTokens: 1600, contextTokens: 200_000 }
  fc.assert(fc.property(text, fc.array(message, { minLength: 1, maxLength: 5 }), fc.array(tool, { maxLength: 3 }), (system, messages, tools) => {
    const body: Record<string, unknown> = {
      model: 'anthropic/claude-sonnet-4',
      max_tokens: 100,
      system,
      messages: messages.map((m) => ({ role: m.role === 'assistant' ? 'assistant' : 'user', content: [{ type: 'text', text: m.content }] })),
      tools: tools.map((f) => ({ name: f.name, description: f.description, input_schema: f.parameters }))
    }
    const got = estimate(body, 'messages', facts)
    const want = Math.min(200_000, textBytes([system, messages.map((m) => m.content), tools]) + (tools.length > 0 ? 346 : 0))
    if (got < want) throw new Error(`estimate ${got} < ${want}: ${JSON.stringify(body)}`)
    // A real tokenizer counts far fewer: the byte bound is above it too.
    if (got < countTokens(JSON.stringify(body), { disallowedSpecial: new Set() })) throw new Error('below a BPE count of the whole body')
  }), { numRuns: 200 })
  const gemini: EstimateFacts = { upstreamModel: 'gemini-2.5-flash', mediaItemTokens: 15_780, contextTokens: 1_048_576 }
  fc.assert(fc.property(text, fc.array(message, { minLength: 1, maxLength: 5 }), fc.array(tool, { maxLength: 3 }), (system, messages, tools) => {
    const body: Record<string, unknown> = {
      systemInstruction: { parts: [{ text: system }] },
      contents: messages.map((m) => ({ role: m.role === 'assistant' ? 'model' : 'user', parts: [{ text: m.content }] })),
      ...(tools.length > 0 ? { tools: [{ functionDeclarations: tools }], toolConfig: { functionCallingConfig: { mode: 'AUTO' } } } : {})
    }
    const got = estimate(body, 'genai', gemini)
    const want = textBytes([system, messages.map((m) => m.content), tools])
    if (got < want) throw new Error(`estimate ${got} < ${want}: ${JSON.stringify(body)}`)
  }), { numRuns: 200 })
  t.pass('200 messages and 200 genai requests')
})

t.test('the finding: a 100 KB tool description counts in full, not as 1 token', async (t) => {
  const description = 'Looks up the weather for a city and returns a long report. '.repeat(1700).slice(0, 100_000)
  const body = { model: 'openai/gpt-4o', messages: [{ role: 'user', content: 'hi' }], tools: [{ type: 'function', function: { name: 'weather', description, parameters: { type: 'object', properties: { city: { type: 'string' } } } } }] }
  const want = reference(body.messages, [body.tools[0]!.function])
  const got = estimate(body, 'chat')
  t.ok(want > 15_000, `OpenAI counts ${want} tokens`)
  t.ok(got >= want, `the estimate ${got} ≥ ${want}`)
  t.ok(got <= Buffer.byteLength(JSON.stringify(body)), 'and stays within the hold\'s bound (one token per body byte)')
})

t.test('media: an image costs the model\'s per-item bound, base64 is not text, text is never taken for an image', async (t) => {
  const base = estimate({ messages: [{ role: 'user', content: [{ type: 'text', text: 'what is this?' }] }] }, 'chat')
  const withUrl = estimate({ messages: [{ role: 'user', content: [{ type: 'text', text: 'what is this?' }, { type: 'image_url', image_url: { url: 'https://example.com/cat.png', detail: 'high' } }] }] }, 'chat')
  const b64 = 'data:image/png;base64,' + 'iVBORw0KGgo'.repeat(20_000)
  const inline = estimate({ messages: [{ role: 'user', content: [{ type: 'text', text: 'what is this?' }, { type: 'image_url', image_url: { url: b64 } }] }] }, 'chat')
  t.ok(withUrl - base >= 1480 && withUrl - base < 1520, `an image by URL adds its bound (${withUrl - base})`)
  t.ok(inline - base >= 1480 && inline - base < 1520, `an inline image adds its bound, not its ${b64.length} base64 bytes (${inline - base})`)
  t.equal(estimate({ messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'https://x/y.png' } }] }] }, 'chat', { upstreamModel: 'gpt-4o', contextTokens: CONTEXT }), CONTEXT,
    'a model without a per-image bound: the image is unbounded (the context window)')
  // The same data URL as plain text is text to the provider, and counted so.
  const pasted = b64.slice(0, 40_000)
  const asText = estimate({ messages: [{ role: 'user', content: pasted }] }, 'chat')
  t.ok(asText >= countTokens(pasted), `a data URL inside a message's text is text (${asText} ≥ ${countTokens(pasted)})`)
  const anthropic = estimate({ messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo'.repeat(20_000) } }] }] }, 'messages', { mediaItemTokens: 1600, contextTokens: 200_000 })
  t.ok(anthropic >= 1600 && anthropic < 1700, `an Anthropic base64 image: its bound (${anthropic})`)
  const disguised = estimate({ messages: [{ role: 'assistant', content: [{ type: 'tool_use', id: 't', name: 'f', input: { source: { type: 'base64', media_type: 'image/png', data: 'A'.repeat(50_000) } } }] }] }, 'messages', { mediaItemTokens: 1600, contextTokens: 200_000 })
  t.ok(disguised >= 50_000, `a media-shaped object inside a tool input is text (${disguised})`)
  const audio = 'UklGR'.repeat(10_000)
  const withAudio = estimate({ contents: [{ parts: [{ inlineData: { mimeType: 'audio/wav', data: audio } }] }] }, 'genai', { mediaItemTokens: 15_780, contextTokens: 1_048_576 })
  t.ok(withAudio >= audio.length, 'inline audio: one token per base64 byte')
})

t.test('what the gateway cannot see makes the estimate the context window', async (t) => {
  const cases: Array<[string, Record<string, unknown>, 'chat' | 'responses' | 'messages' | 'genai']> = [
    ['a chat file by id', { messages: [{ role: 'user', content: [{ type: 'file', file: { file_id: 'file-1' } }] }] }, 'chat'],
    ['a chat PDF inline', { messages: [{ role: 'user', content: [{ type: 'file', file: { filename: 'a.pdf', file_data: 'data:application/pdf;base64,JVBERi0=' } }] }] }, 'chat'],
    ['previous_response_id', { input: 'go on', previous_response_id: 'resp_1' }, 'responses'],
    ['a hosted web_search tool', { input: 'news?', tools: [{ type: 'web_search' }] }, 'responses'],
    ['an input_file by URL', { input: [{ role: 'user', content: [{ type: 'input_file', file_url: 'https://x/a.pdf' }] }] }, 'responses'],
    ['Anthropic web search', { messages: [{ role: 'user', content: 'news?' }], tools: [{ type: 'web_search_20250305', name: 'web_search', max_uses: 20 }] }, 'messages'],
    ['a GenAI inline video (a static one is a few bytes a second)', { contents: [{ parts: [{ inlineData: { mimeType: 'video/mp4', data: 'AAAAIGZ0eXA=' }, videoMetadata: { fps: 24 } }] }] }, 'genai'],
    ['a GenAI inline FLAC (a constant frame plays 65,535 samples)', { contents: [{ parts: [{ inline_data: { mime_type: 'audio/flac', data: 'ZkxhQw==' } }] }] }, 'genai'],
    ['an Anthropic PDF document', { messages: [{ role: 'user', content: [{ type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: 'JVBERi0=' } }] }] }, 'messages'],
    ['an Anthropic document by URL', { messages: [{ role: 'user', content: [{ type: 'document', source: { type: 'url', url: 'https://x/a.pdf' } }] }] }, 'messages'],
    ['GenAI fileData', { contents: [{ parts: [{ fileData: { mimeType: 'video/mp4', fileUri: 'gs://x' } }] }] }, 'genai'],
    ['GenAI urlContext', { contents: [{ parts: [{ text: 'read https://x' }] }], tools: [{ urlContext: {} }] }, 'genai'],
    ['GenAI cached content', { contents: [{ parts: [{ text: 'hi' }] }], cachedContent: 'cachedContents/1' }, 'genai']
  ]
  for (const [name, body, dialect] of cases) t.equal(estimate(body, dialect), CONTEXT, name)
  t.ok(estimate({ messages: [{ role: 'user', content: 'x' }], tools: [{ type: 'bash_20250124', name: 'bash' }] }, 'messages') >= 1500 + 530, 'an Anthropic client tool: its documented prompt')
  t.ok(estimate({ messages: [{ role: 'user', content: 'x' }], tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object', properties: { file_id: { type: 'string' } } } } }] }, 'chat') < 200,
    'a schema property named file_id is text, not a reference')
})

t.test('the tokenizer is picked by the provider\'s model name; its cost is bounded', async (t) => {
  t.same(encodingsFor('gpt-4o-mini'), ['o200k_base'])
  t.same(encodingsFor('ft:gpt-4o-mini:acme::abc'), ['o200k_base'])
  t.same(encodingsFor('gpt-3.5-turbo'), ['cl100k_base'])
  t.same(encodingsFor('gpt-4-turbo'), ['cl100k_base'])
  t.same(encodingsFor('gpt-4.1-nano'), ['o200k_base'])
  t.same(encodingsFor('o3-mini'), ['o200k_base'])
  t.same(encodingsFor('gpt-custom'), ['o200k_base', 'cl100k_base'], 'an unknown OpenAI name: both, the larger count')
  t.same(encodingsFor('gemini-2.5-flash'), [], 'Gemini behind the chat-completions API: bytes')
  t.same(encodingsFor('claude-sonnet-4-20250514'), [])
  t.equal(tokenCounter('gpt-4o').count('hello <|endoftext|> world'), countTokens('hello <|endoftext|> world', { disallowedSpecial: new Set() }), 'special-token text is text')
  // 10 MiB of hostile text (random CJK, the slowest to tokenize): bounded by the budget.
  const cjk = Array.from({ length: 3_500_000 }, (_, i) => String.fromCharCode(0x4e00 + ((i * 7919) % 20000))).join('')
  const started = performance.now()
  const got = estimate({ messages: [{ role: 'user', content: cjk }] }, 'chat', { upstreamModel: 'gpt-4o', contextTokens: 1e9 })
  const ms = performance.now() - started
  t.ok(got >= utf8Bytes(cjk) - TOKENIZE_BUDGET_BYTES, `beyond the ${TOKENIZE_BUDGET_BYTES}-byte budget every byte counts (${got})`)
  t.ok(ms < 3000, `10 MiB estimated in ${ms.toFixed(0)} ms (the budget bounds the tokenizer's share)`)
  t.comment(`10 MiB of CJK text: ${ms.toFixed(0)} ms`)
})

t.test('hidden reasoning: the output estimate is the held output when the model may have reasoned unseen', async (t) => {
  t.ok(mayReasonUnseen('chat', { messages: [] }, 'o3-mini'))
  t.ok(mayReasonUnseen('responses', { input: 'x' }, 'gpt-5'))
  t.notOk(mayReasonUnseen('responses', { input: 'x', reasoning: { effort: 'none' } }, 'gpt-5.1'))
  t.notOk(mayReasonUnseen('chat', { messages: [] }, 'gpt-4o'))
  t.ok(mayReasonUnseen('messages', { thinking: { type: 'enabled', budget_tokens: 2000 } }, 'claude-sonnet-4-20250514'))
  t.notOk(mayReasonUnseen('messages', {}, 'claude-sonnet-4-20250514'))
  t.ok(mayReasonUnseen('chat', { messages: [], thinking: { type: 'enabled', budget_tokens: 2000 } }, 'claude-sonnet-4-20250514'), 'Anthropic\'s OpenAI-compatible endpoint: thinking, none of it returned')
  t.notOk(mayReasonUnseen('chat', { messages: [] }, 'claude-sonnet-4-20250514'))
  t.ok(mayReasonUnseen('genai', { contents: [] }, 'gemini-2.5-flash'))
  t.notOk(mayReasonUnseen('genai', { generationConfig: { thinkingConfig: { thinkingBudget: 0 } } }, 'gemini-2.5-flash'))
  const u = estimateUsage('chat', { json: { messages: [{ role: 'user', content: 'think' }] } }, { upstreamModel: 'o3-mini', outputCeiling: () => 5000 }, 12)
  t.equal(u.outputTokens, 5000, 'an o-series answer cut before its usage: the output it was held for')
  t.equal(estimateUsage('chat', { json: { messages: [] } }, { upstreamModel: 'gpt-4o', outputCeiling: () => 5000 }, 12).outputTokens, 12, 'gpt-4o: the bytes seen')
})
