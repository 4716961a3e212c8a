import t from 'tap'
import fc from 'fast-check'
import { applyBodyRules } from '../plugins/foundation/request/body-rules.js'
import { applyCapEdits, type CapEdits } from '../plugins/foundation/request/uses-caps.js'
import { findTopLevelModelValues, rewriteJsonModel } from '../plugins/foundation/request/json-model.js'
import { boundaryOf, summariseMultipart } from '../plugins/foundation/request/multipart.js'
import { rewriteMultipartModel } from '../plugins/foundation/request/multipart-model.js'

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

t.test('applyBodyRules drops top-level members with one adjacent comma, every other byte kept', async (t) => {
  const drop = (raw: string, ...names: string[]): string | undefined =>
    applyBodyRules(Buffer.from(raw), { dropFields: new Set(names), maxOutputTokens: undefined })?.toString()
  t.equal(drop('{"response_format": "b64_json", "model":"m"}', 'response_format'), '{"model":"m"}', 'first member')
  t.equal(drop('{"a":1 , "response_format" : "url" ,\n "b": 2.0}', 'response_format'), '{"a":1 , "b": 2.0}', 'middle member')
  t.equal(drop('{"a":1, "response_format":{"x":[1,2]} }', 'response_format'), '{"a":1 }', 'last member')
  t.equal(drop(' {"response_format":"url"} ', 'response_format'), ' {} ', 'only member')
  t.equal(drop('{"response_format":"a","n":1,"response_format":"b"}', 'response_format'), '{"n":1}', 'every duplicate')
  t.equal(drop('{"respo\\u006ese_format":"a","n":1}', 'response_format'), '{"n":1}', 'an escaped key, read as JSON.parse reads it')
  t.equal(drop('{"x":{"response_format":"a"}}', 'response_format'), undefined, 'nested members are not top-level: nothing to do')
  t.equal(drop('[{"response_format":"a"}]', 'response_format'), undefined, 'not an object')
  t.equal(drop('{"response_format":', 'response_format'), undefined, 'malformed')
})

t.test('property: dropping members equals the object serialised without them', async () => {
  const key = fc.string().filter((k) => k !== '__proto__')
  fc.assert(fc.property(fc.dictionary(key, fc.jsonValue()), fc.array(key, { maxLength: 3 }), (obj, extra) => {
    const names = new Set([...Object.keys(obj).filter((_, i) => i % 2 === 0), ...extra])
    const raw = Buffer.from(JSON.stringify(obj))
    const out = applyBodyRules(raw, { dropFields: names, maxOutputTokens: undefined })
    const kept = Object.fromEntries(Object.entries(obj).filter(([k]) => !names.has(k)))
    return (out ?? raw).toString() === JSON.stringify(kept) && (out === null) === (Object.keys(kept).length === Object.keys(obj).length)
  }))
})

t.test('applyBodyRules lowers output-token limits above the cap, in every family\'s place', async (t) => {
  const cap = (raw: string, max = 8192): string | undefined =>
    applyBodyRules(Buffer.from(raw), { dropFields: new Set(), maxOutputTokens: max })?.toString()
  t.equal(cap('{"model":"m", "max_tokens" : 128000,"n":1}'), '{"model":"m", "max_tokens" : 8192,"n":1}', 'messages / chat max_tokens')
  t.equal(cap('{"max_completion_tokens":99999999999999999999999}'), '{"max_completion_tokens":8192}', 'beyond 2^53')
  t.equal(cap('{"max_output_tokens":10000}'), '{"max_output_tokens":8192}', 'responses')
  t.equal(cap('{"generationConfig":{"temperature":1,"maxOutputTokens":65536}}'), '{"generationConfig":{"temperature":1,"maxOutputTokens":8192}}', 'generative content')
  t.equal(cap('{"generation_config":{"max_output_tokens":9000}}'), '{"generation_config":{"max_output_tokens":8192}}', 'generative content, snake case')
  t.equal(cap('{"max_tokens":9000,"max_tokens":10000}'), '{"max_tokens":8192,"max_tokens":8192}', 'every duplicate')
  t.equal(cap('{"max_tokens":8192}'), undefined, 'at the cap: untouched')
  t.equal(cap('{"max_tokens":100}'), undefined, 'below the cap: untouched')
  t.equal(cap('{"max_tokens":9000.0,"max_completion_tokens":"9000","max_output_tokens":-1}'), undefined, 'not a plain integer: left to the provider')
  t.equal(cap('{"x":{"max_tokens":9000}}'), undefined, 'only where a family reads it')
})

t.test('applyBodyRules drops, then caps', async (t) => {
  const out = applyBodyRules(Buffer.from('{"response_format":"url","max_tokens":100000}'), { dropFields: new Set(['response_format']), maxOutputTokens: 64000 })
  t.equal(out?.toString(), '{"max_tokens":64000}')
})

t.test('applyCapEdits sets unset caps: a new first member, every duplicate or null value replaced, entries by index', async (t) => {
  const edits = (params: Record<string, number>, entries: Array<{ list: string, index: number, field: string, value: number }> = []): CapEdits => ({ params: new Map(Object.entries(params)), entries })
  t.equal(applyCapEdits(Buffer.from('{ "tools": [{"type":"web_search"}] }'), edits({ max_tool_calls: 10 }))?.toString(), '{"max_tool_calls":10, "tools": [{"type":"web_search"}] }')
  t.equal(applyCapEdits(Buffer.from('{"max_tool_calls":null,"tools":[],"max_tool_calls" : null}'), edits({ max_tool_calls: 4 }))?.toString(), '{"max_tool_calls":4,"tools":[],"max_tool_calls" : 4}', 'every duplicate: parsers differ on which they keep')
  t.equal(applyCapEdits(Buffer.from('{"max\\u005ftool_calls":null,"tools":[]}'), edits({ max_tool_calls: 4 }))?.toString(), '{"max\\u005ftool_calls":4,"tools":[]}', 'an escaped key is the key')
  const messages = '{"model":"m","tools":[ {"type":"custom","name":"f"}, "odd", {"type":"web_search_20250305","name":"web_search","max_uses":null}, {} ]}'
  const out = applyCapEdits(Buffer.from(messages), edits({}, [{ list: 'tools', index: 2, field: 'max_uses', value: 10 }, { list: 'tools', index: 3, field: 'max_uses', value: 5 }]))
  t.same(JSON.parse(out?.toString() ?? 'null'), { model: 'm', tools: [{ type: 'custom', name: 'f' }, 'odd', { type: 'web_search_20250305', name: 'web_search', max_uses: 10 }, { max_uses: 5 }] }, 'entries counted with non-objects among them; an empty object gets no comma')
  t.equal(applyCapEdits(Buffer.from('[1]'), edits({ max_tool_calls: 1 })), null, 'not an object: nothing')
  t.equal(applyCapEdits(Buffer.from('{"tools":[]}'), edits({}, [{ list: 'tools', index: 0, field: 'max_uses', value: 1 }])), null, 'no such entry: nothing')
})
