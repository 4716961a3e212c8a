import fc from 'fast-check'
import t from 'tap'
import { createJsonScanner, type JsonScanOptions, type JsonScanResult } from '../plugins/concerns/metering/json-scan.js'
import { cut } from './helpers/chunks.js'

function scan (chunks: readonly Buffer[], options: JsonScanOptions): JsonScanResult {
  const s = createJsonScanner(options)
  for (const c of chunks) s.push(c)
  return s.result()
}

// Keys written with escapes are never matched (by design), so none is asked for here.
const capture = new Set(['usage', 'id', 'ключ'])

t.test('captures the raw text of top-level values, last one winning', async (t) => {
  const body = Buffer.from('{"id":"a","nested":{"usage":{"x":1}},"usage" : { "prompt_tokens" : 12345678901234567890 , "s":"}\\",{" } ,"id":"b"}')
  const r = scan([body], { capture })
  t.equal(r.root, 'object')
  t.ok(r.complete)
  t.equal(r.captured.get('id'), '"b"')
  t.equal(r.captured.get('usage')?.trim(), '{ "prompt_tokens" : 12345678901234567890 , "s":"}\\",{" }')
})

t.test('records are the elements of a root array (a streamed generateContent answer)', async (t) => {
  const body = Buffer.from('[{"usage":1},\r\n{"usage":2},\r\n{"other":3}]')
  const r = scan([body], { capture })
  t.equal(r.root, 'array')
  t.equal(r.captured.get('usage'), '2')
  t.ok(r.complete)
})

t.test('counts array items that hold an image key, and generated text bytes', async (t) => {
  const body = Buffer.from(JSON.stringify({
    data: [{ b64_json: 'QUJD'.repeat(1000) }, { url: 'https://x/y.png' }, { revised_prompt: 'none' }, 'x', { nested: { b64_json: 'x' } }],
    text: 'héllo "wörld" 😀',
    deeper: [{ text: 'abc' }, { text: 5 }, { other: 'not counted' }]
  }))
  const r = scan([body], { items: { arrays: new Set(['data']), present: new Set(['b64_json', 'url']) }, textKeys: new Set(['text']) })
  t.equal(r.items, 2)
  // UTF-8 bytes of 'héllo "wörld" 😀' (é and ö 2, the emoji 4), plus 'abc'.
  t.equal(r.textBytes, Buffer.byteLength('héllo "wörld" 😀') + 3)
})

t.test('malformed and non-JSON bodies', async (t) => {
  t.equal(scan([Buffer.from('event: x\ndata: {}')], {}).root, 'other')
  t.equal(scan([Buffer.from('"just a string"')], {}).root, 'other')
  t.equal(scan([Buffer.from('')], {}).root, 'empty')
  const truncated = scan([Buffer.from('{"data":[{"url":"a"},{"url":"b"')], { items: { arrays: new Set(['data']), present: new Set(['url']) } })
  t.equal(truncated.items, 1)
  t.notOk(truncated.complete)
  t.notOk(scan([Buffer.from('{"a":1]')], {}).complete, 'mismatched bracket')
  t.notOk(scan([Buffer.from('{"a":1} x')], {}).complete, 'trailing garbage')
  t.notOk(scan([Buffer.from('['.repeat(100_000))], {}).complete, 'absurd nesting stops early')
  const big = scan([Buffer.from(`{"usage":"${'x'.repeat(2000)}"}`)], { capture, maxCaptureBytes: 1000 })
  t.notOk(big.captured.has('usage'), 'an oversized captured value is dropped')
})

// Objects whose top-level values the scan must capture exactly as JSON.parse reads them.
const record = fc.dictionary(
  fc.oneof(fc.constantFrom('usage', 'id', 'weird "key"', 'ключ'), fc.string({ unit: 'binary', maxLength: 8 })),
  fc.jsonValue({ maxDepth: 4 }),
  { maxKeys: 6 }
)

t.test('property: captured values equal JSON.parse, for any formatting and any split', async (t) => {
  fc.assert(fc.property(
    fc.oneof(record, fc.array(record, { maxLength: 4 })),
    fc.constantFrom(undefined, 1, '\t', '\r\n  '),
    fc.array(fc.nat(), { maxLength: 25 }),
    (value, indent, points) => {
      const text = JSON.stringify(value, null, indent)
      const buf = Buffer.from(text)
      const r = scan(cut(buf, points.map((p) => p % (buf.length + 1))), { capture })
      if (!r.complete) throw new Error(`not complete: ${text}`)
      const records = Array.isArray(value) ? value : [value]
      for (const key of capture) {
        let want: unknown
        for (const rec of records) if (Object.prototype.hasOwnProperty.call(rec, key)) want = rec[key]
        const got = r.captured.get(key)
        if (want === undefined) {
          if (got !== undefined) throw new Error(`captured ${key} that is not there`)
        } else if (got === undefined || JSON.stringify(JSON.parse(got)) !== JSON.stringify(want)) {
          throw new Error(`${key}: ${String(got)} !== ${JSON.stringify(want)}`)
        }
      }
    }
  ), { numRuns: 400 })
  t.pass('400 runs')
})

t.test('a 30 MB image answer is scanned quickly in 64 KiB chunks', async (t) => {
  const image = 'iVBORw0KGgo'.repeat(1_000_000)
  const body = Buffer.from(JSON.stringify({ created: 1, data: [{ b64_json: image }, { b64_json: image }, { b64_json: image }], usage: { input_tokens: 50, output_tokens: 4160 } }))
  const chunks = cut(body, Array.from({ length: Math.floor(body.length / 65536) }, (_, i) => (i + 1) * 65536))
  const started = process.hrtime.bigint()
  const r = scan(chunks, { capture: new Set(['usage']), items: { arrays: new Set(['data']), present: new Set(['b64_json']) } })
  const ms = Number(process.hrtime.bigint() - started) / 1e6
  t.equal(r.items, 3)
  t.same(JSON.parse(r.captured.get('usage') ?? 'null'), { input_tokens: 50, output_tokens: 4160 })
  t.ok(ms < 1000, `took ${ms.toFixed(0)} ms for ${(body.length / 1e6).toFixed(0)} MB`)
})
