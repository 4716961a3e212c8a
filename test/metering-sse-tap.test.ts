// The fast path of stream metering (sse-tap.ts) against the exact one (sse.ts + JSON.parse +
// the dialect's event reader): on any well-formed stream, whatever its line endings, spacing
// and chunking, both must find the same usage and the same generated text.
import fc from 'fast-check'
import t from 'tap'
import { eventJson } from '../plugins/concerns/metering/body-reader.js'
import { createSseParser } from '../plugins/concerns/metering/sse.js'
import { createSseTap } from '../plugins/concerns/metering/sse-tap.js'
import { tokenDialect, type StreamState, type TokenDialect } from '../plugins/concerns/metering/token-dialects.js'
import { createTokenMeter } from '../plugins/concerns/metering/token-meter.js'
import { createMeter } from '../plugins/concerns/metering/meter.js'
import { createUsageEventFilter } from '../plugins/concerns/metering/usage-chunk-filter.js'
import { tokenUsage } from '../plugins/concerns/metering/usage.js'
import { estimateUsage } from '../plugins/concerns/metering/estimate.js'
import { cut } from './helpers/chunks.js'
import { meterOf } from './helpers/operations.js'

const chat = tokenDialect('chat')
const messages = tokenDialect('messages')

/** The exact reading: every event parsed. */
function exact (dialect: TokenDialect, body: Buffer): StreamState {
  const state: StreamState = { usage: undefined, textBytes: 0 }
  const parser = createSseParser((e) => {
    const data = eventJson(e.data)
    if (data) dialect.event(e.event, data, state)
  })
  parser.push(body)
  parser.end()
  return state
}

function metered (dialect: TokenDialect, chunks: readonly Buffer[]): ReturnType<ReturnType<typeof createTokenMeter>['finish']> {
  const meter = createTokenMeter(dialect, { meter: meterOf('chat.completions'), sse: true, request: {} })
  for (const c of chunks) meter.onChunk(c)
  return meter.finish()
}

const text = fc.string({ unit: 'binary', maxLength: 12 })
const eol = fc.constantFrom('\n', '\r\n', '\r')
const indent = fc.constantFrom(undefined, 1, '\t')

/** One JSON value as an upstream may write it: compact, or spaced and split over several data lines. */
function dataLines (value: unknown, spacing: number | string | undefined, end: string): string {
  const json = JSON.stringify(value, null, spacing)
  return json.split('\n').map((line) => `data: ${line}`).join(end) + end
}

const chatStream = fc.record({
  deltas: fc.array(fc.record({ content: text, reasoning: fc.option(text, { nil: undefined }), tool: fc.option(text, { nil: undefined }) }), { maxLength: 6 }),
  usage: fc.option(fc.record({ prompt_tokens: fc.nat(5000), completion_tokens: fc.nat(5000) }), { nil: undefined }),
  comment: fc.boolean(),
  spacing: indent,
  eol
}).map(({ deltas, usage, comment, spacing, eol }) => {
  let body = comment ? `: keep-alive${eol}${eol}` : ''
  for (const d of deltas) {
    const delta: Record<string, unknown> = { content: d.content }
    if (d.reasoning !== undefined) delta.reasoning_content = d.reasoning
    if (d.tool !== undefined) delta.tool_calls = [{ index: 0, function: { name: 'f', arguments: d.tool } }]
    body += dataLines({ id: 'c', object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: null }], usage: null }, spacing, eol) + eol
  }
  if (usage) body += dataLines({ id: 'c', choices: [], usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens } }, spacing, eol) + eol
  return `${body}data: [DONE]${eol}${eol}`
})

const messagesStream = fc.record({
  deltas: fc.array(fc.oneof(
    text.map((s) => ({ type: 'text_delta', text: s })),
    text.map((s) => ({ type: 'input_json_delta', partial_json: s })),
    text.map((s) => ({ type: 'thinking_delta', thinking: s }))
  ), { maxLength: 6 }),
  input: fc.nat(5000),
  output: fc.option(fc.nat(5000), { nil: undefined }),
  spacing: indent,
  eol
}).map(({ deltas, input, output, spacing, eol }) => {
  const ev = (name: string, data: unknown): string => `event: ${name}${eol}${dataLines(data, spacing, eol)}${eol}`
  let body = ev('message_start', { type: 'message_start', message: { id: 'm', content: [], usage: { input_tokens: input, output_tokens: 1 } } })
  body += ev('content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } })
  for (const delta of deltas) body += ev('content_block_delta', { type: 'content_block_delta', index: 0, delta })
  if (output !== undefined) body += ev('message_delta', { type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: output } })
  return body + ev('message_stop', { type: 'message_stop' })
})

/** Throws unless the meter, fed the stream cut at `points`, finds what the exact path finds. */
function meteredAsExact (dialect: TokenDialect, stream: string, points: readonly number[]): void {
  const body = Buffer.from(stream)
  const want = exact(dialect, body)
  const got = metered(dialect, cut(body, points.map((p) => p % (body.length + 1))))
  const expected = tokenUsage(want.usage, estimateUsage(dialect.name, {}, undefined, want.textBytes))
  if (JSON.stringify(got) !== JSON.stringify(expected)) {
    throw new Error(`${JSON.stringify(stream)}: ${JSON.stringify(got)} !== ${JSON.stringify(expected)}`)
  }
}

for (const [name, dialect, streams] of [['chat', chat, chatStream], ['messages', messages, messagesStream]] as const) {
  t.test(`property: the fast path meters a ${name} stream as the exact path does, any split`, async (t) => {
    fc.assert(fc.property(streams, fc.array(fc.nat(), { maxLength: 12 }), (stream, points) => {
      meteredAsExact(dialect, stream, points)
    }), { numRuns: 1500 })
    t.pass('1500 runs')
  })
}

// The tap restores the state after an event's envelope (its bytes up to its first text value)
// when the next event repeats them: streams whose events share envelopes, of any make-up (an
// escaped key, a usage object, escapes and line ends in values, several data lines), mixed with
// events of another envelope, must still be read as the exact path reads them.
const envelopePart = fc.constantFrom(
  '"id":"chatcmpl-1"', '"n":12', '"x":null', '"usage":{"prompt_tokens":3,"completion_tokens":4}', '"usage":null',
  '"us\\u0061ge":{"prompt_tokens":5}', '"v":"a\\"b\\\\"', '"arr":[1,{"k":"v"}]', '"k":\n"v"', '"ok":true',
  // A line that ends inside a string: the event is malformed, its text is not counted.
  '"s":"a\nb"'
)
const envelopeStream = fc.record({
  envelopes: fc.array(fc.record({
    parts: fc.array(envelopePart, { maxLength: 4 }),
    // The envelope ends at the first text value: a fixed refusal before the content, or none.
    delta: fc.constantFrom('', '"role":"assistant",', '"refusal":"no",', '"tool_calls":null,')
  }), { minLength: 1, maxLength: 3 }),
  // A block of events, repeated: an event with no text value has no envelope (the next one's
  // must not reach into it), and line endings may change from one event to the next.
  block: fc.array(fc.record({
    envelope: fc.nat(),
    hasText: fc.boolean(),
    tail: fc.constantFrom('', ',"finish_reason":null', ',"usage":{"prompt_tokens":9}', ',"x":"tail"'),
    eol
  }), { minLength: 1, maxLength: 4 }),
  times: fc.integer({ min: 1, max: 3 }),
  texts: fc.array(text, { minLength: 1, maxLength: 6 }),
  lead: fc.constantFrom('', ': ping', 'event: delta')
}).map(({ envelopes, block, times, texts, lead }) => {
  let body = ''
  let k = 0
  for (let r = 0; r < times; r++) {
    for (const { envelope, hasText, tail, eol } of block) {
      const { parts, delta } = envelopes[envelope % envelopes.length] as { parts: string[], delta: string }
      const choices = hasText ? `"choices":[{"index":0,"delta":{${delta}"content":${JSON.stringify(texts[k++ % texts.length])}}}]` : '"choices":[]'
      const json = `{${[...parts, choices].join(',')}${tail}}`
      const lines: string[] = lead === '' ? [] : [lead]
      for (const l of json.split('\n')) lines.push(`data: ${l}`)
      body += lines.join(eol) + eol + eol
    }
  }
  return body
})

t.test('property: events that repeat an envelope are metered as the exact path meters them, any split', async (t) => {
  fc.assert(fc.property(envelopeStream, fc.array(fc.nat(), { maxLength: 12 }), (stream, points) => {
    meteredAsExact(chat, stream, points)
  }), { numRuns: 3000 })
  t.pass('3000 runs')
})

t.test('property: envelopes change nothing: fed one byte a chunk (never finding one), the tap reads and passes on the same', async (t) => {
  const walk = (chunks: readonly Buffer[]): string => {
    const parsed: string[] = []
    const tap = createSseTap({
      textKeys: ['content', 'reasoning_content', 'refusal', 'arguments'],
      parseKeys: ['usage'],
      maxEventBytes: 1 << 20,
      onParse: (raw) => parsed.push(raw.toString('latin1')),
      drop: (raw) => raw.length % 2 === 0
    })
    const out: Buffer[] = []
    for (const c of chunks) out.push(...tap.push(c))
    out.push(...tap.end())
    return JSON.stringify({ parsed, text: tap.textBytes(), out: Buffer.concat(out).toString('latin1') })
  }
  fc.assert(fc.property(envelopeStream, fc.array(fc.nat(), { maxLength: 12 }), (stream, points) => {
    const body = Buffer.from(stream)
    const want = walk([...body].map((b) => Buffer.from([b])))
    const got = walk(cut(body, points.map((p) => p % (body.length + 1))))
    if (got !== want) throw new Error(`${JSON.stringify(stream)}: ${got} !== ${want}`)
  }), { numRuns: 3000 })
  t.pass('3000 runs')
})

t.test('property: metering and filtering in one walk = the meter and the usage filter apart, any split', async (t) => {
  const prefix = fc.constantFrom('', '\n', ' \r\n', '\uFEFF')
  fc.assert(fc.property(chatStream, prefix, fc.array(fc.nat(), { maxLength: 12 }), (stream, lead, points) => {
    const body = Buffer.from(lead + stream)
    const chunks = cut(body, points.map((p) => p % (body.length + 1)))
    const input = { meter: meterOf('chat.completions'), sse: true, request: {} }
    // Apart: the meter sees every chunk, the filter decides what the client gets.
    const apart = createMeter(input)
    const filter = createUsageEventFilter()
    const wantBytes: Buffer[] = []
    for (const c of chunks) {
      apart.onChunk(c)
      wantBytes.push(...filter.push(c))
    }
    wantBytes.push(...filter.end())
    // Together: one walk.
    const together = createMeter({ ...input, dropUsageEvents: true })
    if (!together.filter) throw new Error('a chat meter asked to drop usage events offers a filter')
    const gotBytes: Buffer[] = []
    for (const c of chunks) gotBytes.push(...together.filter.push(c))
    gotBytes.push(...together.filter.end())
    const want = Buffer.concat(wantBytes).toString('latin1')
    const got = Buffer.concat(gotBytes).toString('latin1')
    if (got !== want) throw new Error(`${JSON.stringify(lead + stream)}: passed on ${JSON.stringify(got)} !== ${JSON.stringify(want)}`)
    const [u1, u2] = [JSON.stringify(together.finish()), JSON.stringify(apart.finish())]
    if (u1 !== u2) throw new Error(`${JSON.stringify(lead + stream)}: usage ${u1} !== ${u2}`)
  }), { numRuns: 1500 })
  t.pass('1500 runs')
})

t.test('one walk: a client that left still has its stream metered to the end', async (t) => {
  const usage = { prompt_tokens: 7, completion_tokens: 3, total_tokens: 10 }
  const body = Buffer.from(`data: {"choices":[{"delta":{"content":"hi"}}],"usage":null}\n\ndata: {"choices":[],"usage":${JSON.stringify(usage)}}`)
  const meter = createMeter({ meter: meterOf('chat.completions'), sse: true, request: {}, dropUsageEvents: true })
  for (const c of cut(body, [10, 60])) meter.filter?.push(c)
  // No filter.end(): the relay skips it once the client is gone; finish still reads the last event.
  const got = meter.finish()
  t.equal(got.inputTokens, 7)
  t.equal(got.outputTokens, 3)
  t.equal(got.reported, true)
})

t.test('the tap counts text in UTF-8 bytes, an escape as the bytes of what it stands for', async (t) => {
  const tap = createSseTap({ textKeys: ['content'], parseKeys: ['usage'], maxEventBytes: 1 << 20 })
  tap.push(Buffer.from('data: {"choices":[{"delta":{"content":"héllo 👋 \\"q\\" \\u00e9"}}]}\n\n'))
  tap.end()
  t.equal(tap.textBytes(), 18) // h é(2) l l o ␠ 👋(4) ␠ " q " ␠ \u00e9(2)
  t.equal(tap.textBytes(), Buffer.byteLength('héllo 👋 "q" é'), 'the UTF-8 size of the decoded text')
})

t.test('an event whose usage holds an object is parsed; usage: null is not', async (t) => {
  const parsed: string[] = []
  const tap = createSseTap({ textKeys: ['content'], parseKeys: ['usage'], maxEventBytes: 1 << 20, onParse: (raw) => parsed.push(raw.toString()) })
  tap.push(Buffer.from('data: {"choices":[{"delta":{"content":"ab"}}],"usage":null}\n\ndata: {"choices":[],"usage" :\n'))
  tap.push(Buffer.from('data:  {"prompt_tokens":1}}\n\n'))
  tap.end()
  t.equal(tap.textBytes(), 2)
  t.same(parsed, ['data: {"choices":[],"usage" :\ndata:  {"prompt_tokens":1}}\n\n'])
})

t.test('a key written with escapes may be any key: its event is parsed', async (t) => {
  const parsed: string[] = []
  const tap = createSseTap({ textKeys: ['content'], parseKeys: ['usage'], maxEventBytes: 1 << 20, onParse: (raw) => parsed.push(raw.toString()) })
  tap.push(Buffer.from('data: {"us\\u0061ge":{"prompt_tokens":1},"x":["a\\"b"]}\n\ndata: {"v":["a\\"b"],"content":"xy"}\n\n'))
  tap.end()
  t.equal(parsed.length, 1, 'only the event with the escaped key')
  t.equal(tap.textBytes(), 2, 'an escape in a value is no reason to parse')
})

t.test('a line that ends inside a string makes the event malformed: its text is not counted', async (t) => {
  const tap = createSseTap({ textKeys: ['content'], parseKeys: ['usage'], maxEventBytes: 1 << 20 })
  tap.push(Buffer.from('data: {"content":"ab\ndata: cd"}\n\ndata: {"content":"ok"}\n\n'))
  tap.end()
  t.equal(tap.textBytes(), 2)
})

t.test('lines are framed before JSON: a line that ends after a backslash still ends, and so does its event', async (t) => {
  const parsed: string[] = []
  const tap = createSseTap({ textKeys: ['content'], parseKeys: ['usage'], maxEventBytes: 1 << 20, onParse: (raw) => parsed.push(raw.toString()) })
  tap.push(Buffer.from('data: {"content":"ab\\\n\ndata: {"usage":{"prompt_tokens":1}}\n\n'))
  tap.end()
  t.equal(tap.textBytes(), 0, 'the broken event counts nothing')
  t.same(parsed, ['data: {"usage":{"prompt_tokens":1}}\n\n'], 'the next event is still found')
})

t.test('a line end after punctuation, a number or a literal ends its line, whatever the line endings', async (t) => {
  // Between JSON strings the tap passes over bytes quickly; a CR, LF or CRLF there still
  // frames the line and, doubled, ends the event.
  for (const eol of ['\n', '\r\n', '\r']) {
    const content = `data: {"choices":[{"delta":{"content":"hi"}}],"n":12,"x":null}${eol}${eol}`
    const usage = `data: {"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2}}${eol}${eol}`
    const done = `data: [DONE]${eol}${eol}`
    const parsed: string[] = []
    const tap = createSseTap({ textKeys: ['content'], parseKeys: ['usage'], maxEventBytes: 1 << 20, onParse: (raw) => parsed.push(raw.toString()), drop: () => true })
    const out = [...tap.push(Buffer.from(content + usage + done)), ...tap.end()]
    const label = JSON.stringify(eol)
    // (The LF of a CRLF blank line follows the event's dispatch, so it is not in the raw bytes.)
    t.same(parsed.map((raw) => raw.trimEnd()), [usage.trimEnd()], `${label}: the usage event alone is read exactly`)
    t.equal(Buffer.concat(out).toString(), content + done, `${label}: the usage event alone is left out`)
    t.equal(tap.textBytes(), 2, `${label}: the content event's text is counted`)
  }
})

t.test('an event over maxEventBytes is counted but never parsed', async (t) => {
  const parsed: string[] = []
  const tap = createSseTap({ textKeys: ['content'], parseKeys: ['usage'], maxEventBytes: 64, onParse: (raw) => parsed.push(raw.toString()) })
  const big = `data: {"content":"${'x'.repeat(100)}","usage":{"prompt_tokens":1}}\n\n`
  for (const piece of cut(Buffer.from(big), [30, 90])) tap.push(piece)
  tap.push(Buffer.from('data: {"usage":{"prompt_tokens":2}}\n\n'))
  tap.end()
  t.equal(tap.textBytes(), 100)
  t.same(parsed, ['data: {"usage":{"prompt_tokens":2}}\n\n'])
})

t.test('a JSON answer is parsed whole when small and scanned when big, with the same result', async (t) => {
  const answer = (content: string): Buffer => Buffer.from(JSON.stringify({ id: 'c', object: 'chat.completion', choices: [{ index: 0, message: { role: 'assistant', content } }], usage: { prompt_tokens: 7, completion_tokens: 9 } }))
  const small = metered(chat, cut(answer('héllo'), [5, 40]))
  t.same({ in: small.inputTokens, out: small.outputTokens, reported: small.reported }, { in: 7, out: 9, reported: true })
  const bigBody = answer('y'.repeat(300 * 1024))
  const big = metered(chat, cut(bigBody, [1000, 200_000]))
  t.same({ in: big.inputTokens, out: big.outputTokens, reported: big.reported }, { in: 7, out: 9, reported: true })
  // Cut off before its usage: the text seen so far is the estimate, whole-parse or not.
  const cutShort = answer('z'.repeat(400)).subarray(0, 300)
  const estimate = metered(chat, [cutShort])
  t.equal(estimate.reported, false)
  t.ok(estimate.outputTokens > 0, 'the text of a cut answer is still counted')
})
