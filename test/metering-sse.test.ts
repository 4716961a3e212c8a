import fc from 'fast-check'
import t from 'tap'
import { createSseParser, type SseEvent } from '../plugins/concerns/metering/sse.js'
import { cut } from './helpers/chunks.js'

function parse (chunks: readonly Buffer[], maxEventBytes?: number): SseEvent[] {
  const events: SseEvent[] = []
  const parser = createSseParser((e) => events.push(e), maxEventBytes === undefined ? {} : { maxEventBytes })
  for (const c of chunks) parser.push(c)
  parser.end()
  return events
}

const splitPoints = (buf: Buffer): fc.Arbitrary<number[]> =>
  fc.array(fc.integer({ min: 0, max: Math.max(0, buf.length) }), { maxLength: 40 })

t.test('reads events, names, multi-line data, comments and ignored fields', async (t) => {
  const stream = Buffer.from([
    ': keep-alive comment',
    'retry: 3000',
    'id: 7',
    'event: message_start',
    'data: {"a":1}',
    '',
    'data:no-space',
    'data:  two spaces keep one',
    '',
    'data',
    '',
    'event: only-a-name',
    '',
    'data: line one',
    'data: line two',
    'unknown: field',
    '',
    ''
  ].join('\n'))
  t.same(parse([stream]), [
    { event: 'message_start', data: '{"a":1}' },
    { event: null, data: 'no-space\n two spaces keep one' },
    { event: null, data: '' },
    { event: null, data: 'line one\nline two' }
  ])
})

t.test('CRLF, CR and LF line endings read the same', async (t) => {
  const lines = ['event: e', 'data: ü€😀', '', 'data: x', 'data: y', '', '']
  const expected = [{ event: 'e', data: 'ü€😀' }, { event: null, data: 'x\ny' }]
  for (const eol of ['\n', '\r\n', '\r']) {
    t.same(parse([Buffer.from(lines.join(eol))]), expected, JSON.stringify(eol))
  }
  t.same(parse([Buffer.from('data: a\r\n\ndata: b\r\rdata: c\n\r\n')]), [
    { event: null, data: 'a' }, { event: null, data: 'b' }, { event: null, data: 'c' }
  ], 'mixed endings')
})

t.test('a leading byte-order mark is not part of the first field name', async (t) => {
  t.same(parse(cut(Buffer.from('\uFEFFdata: x\n\n'), [1, 2])), [{ event: null, data: 'x' }])
})

t.test('the last event is delivered at end() even without its blank line', async (t) => {
  t.same(parse([Buffer.from('data: a\n\ndata: {"usage":1}')]), [{ event: null, data: 'a' }, { event: null, data: '{"usage":1}' }])
  t.same(parse([Buffer.from('data: a\n')]), [{ event: null, data: 'a' }])
  t.same(parse([Buffer.from('event: x\n')]), [], 'no data, no event')
})

t.test('splitting at every byte gives the same events (CRLF and multi-byte UTF-8)', async (t) => {
  const stream = Buffer.from('event: delta\r\ndata: {"text":"日本語 😀 ü"}\r\n\r\n: c\r\ndata: a\r\ndata: b\r\n\r\ndata: [DONE]\r\n\r\n')
  const whole = parse([stream])
  t.equal(whole.length, 3)
  for (let i = 0; i <= stream.length; i++) {
    for (const j of [i + 1, i + 3]) {
      t.same(parse(cut(stream, [i, j])), whole, `split at ${i},${j}`)
    }
  }
  t.same(parse([...stream].map((b) => Buffer.from([b]))), whole, 'one byte at a time')
})

const fieldText = fc.string({ unit: 'binary', maxLength: 30 }).map((s) => s.replace(/[\r\n]/g, ' '))
const eventArb = fc.record({
  name: fc.option(fieldText.filter((s) => s.length > 0 && !s.startsWith(' ')), { nil: null }),
  lines: fc.array(fieldText, { minLength: 1, maxLength: 4 })
})

t.test('property: any events, any line endings, any split', async (t) => {
  fc.assert(fc.property(
    fc.array(eventArb, { maxLength: 6 }),
    fc.constantFrom('\n', '\r\n', '\r'),
    fc.array(fc.nat(), { maxLength: 30 }),
    (events, eol, points) => {
      let text = ''
      for (const e of events) {
        if (e.name !== null) text += `event: ${e.name}${eol}`
        for (const l of e.lines) text += `data: ${l}${eol}`
        text += eol
      }
      const buf = Buffer.from(text)
      const got = parse(cut(buf, points.map((p) => p % (buf.length + 1))))
      const want = events.map((e) => ({ event: e.name, data: e.lines.join('\n') }))
      if (JSON.stringify(got) !== JSON.stringify(want)) throw new Error(`${JSON.stringify(got)} !== ${JSON.stringify(want)}`)
    }
  ), { numRuns: 300 })
  t.pass('300 runs')
})

t.test('property: random splits of a realistic stream never change the events', async (t) => {
  const stream = Buffer.from([
    'event: message_start\ndata: {"type":"message_start","message":{"usage":{"input_tokens":25,"output_tokens":1}}}\n\n',
    'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Здравствуйте, 世界 🌍"}}\n\n',
    'event: ping\ndata: {"type": "ping"}\n\n',
    'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":15}}\n\n'
  ].join(''))
  const whole = parse([stream])
  fc.assert(fc.property(splitPoints(stream), (points) => {
    if (JSON.stringify(parse(cut(stream, points))) !== JSON.stringify(whole)) throw new Error('events differ')
  }), { numRuns: 500 })
  t.pass('500 runs')
})

t.test('an event over maxEventBytes is skipped whole and the next one is read', async (t) => {
  const big = 'x'.repeat(5000)
  const stream = Buffer.from(`data: small\n\ndata: ${big}\ndata: more\n\ndata: after\n\n`)
  const want = [{ event: null, data: 'small' }, { event: null, data: 'after' }]
  t.same(parse([stream], 1000), want)
  t.same(parse(cut(stream, [20, 500, 1200, 2500, 5000]), 1000), want, 'split inside the big line')
  t.same(parse([...stream].map((b) => Buffer.from([b])), 1000), want, 'byte by byte')
})

t.test('a long event in many chunks is read in linear time', async (t) => {
  const payload = 'a'.repeat(8 * 1024 * 1024)
  const stream = Buffer.from(`data: ${payload}\n\ndata: end\n\n`)
  const chunks = cut(stream, Array.from({ length: Math.floor(stream.length / 16384) }, (_, i) => (i + 1) * 16384))
  const started = process.hrtime.bigint()
  const events = parse(chunks)
  const ms = Number(process.hrtime.bigint() - started) / 1e6
  t.equal(events.length, 2)
  t.equal(events[0]?.data.length, payload.length)
  t.ok(ms < 2000, `took ${ms.toFixed(0)} ms`)
})
