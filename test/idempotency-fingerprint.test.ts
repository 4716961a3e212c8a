// What makes two requests "the same" under one idempotency key (canonical JSON, multipart
// without its boundary, route and model), and which X-Idempotency-Key values are accepted.
import t from 'tap'
import { bodyDigest, canonicalJson, fingerprintOf, readIdempotencyKey } from '../plugins/concerns/idempotency/index.js'
import type { ParsedBody } from '../plugins/foundation/request/index.js'
import { multipartBody } from './helpers/wire.js'

const json = (text: string): ParsedBody => ({ kind: 'json', raw: Buffer.from(text), json: JSON.parse(text) as Record<string, unknown> })

t.test('canonical JSON', async (t) => {
  t.equal(canonicalJson('{ "b": 1, "a": [ true, null, { "d": "x", "c": 2 } ] }'), '{"a":[true,null,{"c":2,"d":"x"}],"b":1}', 'members sorted at every level, whitespace dropped')
  t.equal(canonicalJson('{"k":"\\u0041\\n"}'), canonicalJson('{"k":"A\\n"}'), 'escapes are decoded before comparing')
  t.equal(canonicalJson('{"a":1,"a":2}'), '{"a":2}', 'a repeated member keeps its last value, as JSON.parse does')
  t.not(canonicalJson('{"n":9007199254740993}'), canonicalJson('{"n":9007199254740992}'), 'numbers past 2^53 stay distinct')
  t.equal(canonicalJson('{"s":"a,b]}"}'), '{"s":"a,b]}"}', 'delimiters inside strings are text')
  t.equal(canonicalJson('[]'), '[]')
  t.throws(() => canonicalJson('{"a":1} x'), 'trailing text is not JSON')
  t.throws(() => canonicalJson('['.repeat(600) + ']'.repeat(600)), 'nesting past the bound is refused (the digest falls back to raw bytes)')
})

t.test('body digest', async (t) => {
  t.equal(bodyDigest(json('{"model":"m","input":"x"}')), bodyDigest(json('{ "input": "x",\n "model": "m" }')), 'key order and spacing are irrelevant')
  t.not(bodyDigest(json('{"model":"m","input":"x"}')), bodyDigest(json('{"model":"m","input":"y"}')), 'content matters')
  const deep = '['.repeat(600) + ']'.repeat(600)
  t.match(bodyDigest({ kind: 'json', raw: Buffer.from(deep), json: {} }), /^raw:[0-9a-f]{64}$/, 'too deep: the raw bytes are hashed')
  t.equal(bodyDigest(undefined), 'none')

  const parts = [{ name: 'model', value: 'openai/whisper-1' }, { name: 'file', value: Buffer.from('RIFF....WAVE'), filename: 'a.wav', contentType: 'audio/wav' }]
  const one = multipartBody(parts)
  const two = multipartBody(parts)
  t.not(one.contentType, two.contentType, 'each form gets its own boundary')
  const digest = (f: { body: Buffer, contentType: string }): string => bodyDigest({ kind: 'multipart', raw: f.body, contentType: f.contentType, summary: { boundary: f.contentType.slice(f.contentType.indexOf('boundary=') + 9), fields: {}, files: [] } })
  t.equal(digest(one), digest(two), 'the same form with another boundary: the same digest')
  const other = multipartBody([parts[0] as { name: string, value: string }, { name: 'file', value: Buffer.from('RIFF....WAVF'), filename: 'a.wav', contentType: 'audio/wav' }])
  t.not(digest(one), digest(other), 'one byte of the file changed: another digest')
})

t.test('fingerprint: route, model and body', async (t) => {
  const body = json('{"model":"m"}')
  const base = fingerprintOf({ routeId: 'POST /v1/chat/completions', model: 'm', body })
  t.match(base, /^[0-9a-f]{64}$/)
  t.equal(fingerprintOf({ routeId: 'POST /v1/chat/completions', model: 'm', body: json('{ "model" : "m" }') }), base)
  t.not(fingerprintOf({ routeId: 'POST /v1/responses', model: 'm', body }), base, 'route')
  t.not(fingerprintOf({ routeId: 'POST /v1/chat/completions', model: 'n', body }), base, 'model (a path segment is not in the body)')
})

t.test('the X-Idempotency-Key header', async (t) => {
  const raw = (...values: string[]): string[] => values.flatMap((v) => ['X-Idempotency-Key', v])
  t.same(readIdempotencyKey(['Content-Type', 'application/json']), { kind: 'absent' })
  t.same(readIdempotencyKey(raw('order-42')), { kind: 'key', key: 'order-42' })
  t.same(readIdempotencyKey(['x-idempotency-key', 'a b']), { kind: 'key', key: 'a b' }, 'inner spaces are printable')
  t.same(readIdempotencyKey(raw('k'.repeat(255))), { kind: 'key', key: 'k'.repeat(255) })
  for (const [what, headers] of [
    ['empty', raw('')],
    ['256 characters', raw('k'.repeat(256))],
    ['a control character', raw('a\u0001b')],
    ['DEL', raw('a\u007fb')],
    ['non-ASCII', raw('clé')],
    ['sent twice', raw('a', 'b')],
    ['sent twice with the same value', raw('a', 'a')]
  ] as const) {
    t.equal(readIdempotencyKey(headers).kind, 'invalid', what)
  }
})
