import t from 'tap'
import fc from 'fast-check'
import { findTopLevelModelValues, rewriteJsonModel } from '../plugins/request/json-model.js'
import { boundaryOf, summariseMultipart } from '../plugins/request/multipart.js'
import { rewriteMultipartModel } from '../plugins/request/multipart-model.js'

t.test('rewriteJsonModel replaces only the top-level model value, byte for byte', async (t) => {
  const raw = Buffer.from('{ "n": 12345678901234567890, "model" :  "openai/gpt-4o", "x": {"model": "inner"}, "s": "\\"model\\": \\"no\\"" , "f": 1.0}')
  const out = rewriteJsonModel(raw, 'gpt-4o')
  t.ok(out)
  t.equal(out!.toString(), '{ "n": 12345678901234567890, "model" :  "gpt-4o", "x": {"model": "inner"}, "s": "\\"model\\": \\"no\\"" , "f": 1.0}')
})

t.test('rewriteJsonModel replaces every duplicate top-level key (JSON.parse keeps the last)', async (t) => {
  const out = rewriteJsonModel(Buffer.from('{"model":"a","model":"b"}'), 'up')
  t.equal(out!.toString(), '{"model":"up","model":"up"}')
})

t.test('rewriteJsonModel reads escaped key names as JSON.parse does; null when absent', async (t) => {
  t.equal(rewriteJsonModel(Buffer.from('{"mod\\u0065l":"a"}'), 'x')?.toString(), '{"mod\\u0065l":"x"}')
  t.equal(rewriteJsonModel(Buffer.from('{"contents":[]}'), 'x'), null)
})

t.test('rewriteJsonModel keeps multi-byte text and escapes the new value', async (t) => {
  const out = rewriteJsonModel(Buffer.from('{"messages":[{"content":"héllo ✓ \\u00e9"}],"model":"m"}'), 'a"b')
  t.same(JSON.parse(out!.toString()), { messages: [{ content: 'héllo ✓ é' }], model: 'a"b' })
})

t.test('property: for any object with a model, only the model changes', async () => {
  fc.assert(fc.property(fc.dictionary(fc.string().filter((k) => k !== 'model'), fc.jsonValue()), fc.string(), fc.string(), (obj, before, after) => {
    const raw = Buffer.from(JSON.stringify({ ...obj, model: before }))
    const out = rewriteJsonModel(raw, after)
    if (!out) return false
    const parsed = JSON.parse(out.toString()) as Record<string, unknown>
    return parsed.model === after && JSON.stringify({ ...parsed, model: before }) === raw.toString() &&
      findTopLevelModelValues(out).length === 1
  }))
})

function multipart (boundary: string, parts: Array<{ name: string, value: string | Buffer, filename?: string, type?: string }>): Buffer {
  const chunks: Buffer[] = []
  for (const p of parts) {
    let head = `--${boundary}\r\nContent-Disposition: form-data; name="${p.name}"`
    if (p.filename) head += `; filename="${p.filename}"\r\nContent-Type: ${p.type ?? 'application/octet-stream'}`
    chunks.push(Buffer.from(head + '\r\n\r\n'), Buffer.from(p.value), Buffer.from('\r\n'))
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`))
  return Buffer.concat(chunks)
}

t.test('multipart: summary reads fields and file sizes; the model field is rewritten in place', async (t) => {
  const audio = Buffer.alloc(5000, 7)
  const raw = multipart('XyZ', [
    { name: 'file', value: audio, filename: 'a.wav', type: 'audio/wav' },
    { name: 'model', value: 'openai/whisper-1' },
    { name: 'language', value: 'en' }
  ])
  t.equal(boundaryOf('multipart/form-data; boundary=XyZ'), 'XyZ')
  t.equal(boundaryOf('multipart/form-data; boundary="q q"'), 'q q')
  const s = await summariseMultipart(raw, 'multipart/form-data; boundary=XyZ')
  t.same(s.fields, { model: 'openai/whisper-1', language: 'en' })
  t.equal(s.files[0]?.size, 5000)
  t.equal(s.files[0]?.mimeType, 'audio/wav')
  const out = rewriteMultipartModel(raw, 'XyZ', s.fields.model, 'whisper-1')
  t.ok(out)
  const expected = multipart('XyZ', [
    { name: 'file', value: audio, filename: 'a.wav', type: 'audio/wav' },
    { name: 'model', value: 'whisper-1' },
    { name: 'language', value: 'en' }
  ])
  t.ok(out!.equals(expected), 'every other byte is unchanged')
  t.equal(rewriteMultipartModel(raw, 'XyZ', undefined, 'x', 'absent'), null)
})

t.test('multipart: a file part named model is not treated as the field (refused, never forwarded as read)', async (t) => {
  const raw = multipart('b1', [{ name: 'model', value: 'bytes', filename: 'm.bin' }])
  t.throws(() => rewriteMultipartModel(raw, 'b1', undefined, 'x'), { code: 'REQUEST_INVALID' })
})

t.test('multipart: malformed bodies reject', async (t) => {
  await t.rejects(summariseMultipart(Buffer.from('garbage'), 'multipart/form-data'))
})
