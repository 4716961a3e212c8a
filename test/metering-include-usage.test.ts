import { Readable } from 'node:stream'
import fc from 'fast-check'
import t from 'tap'
import { createUsageChunkFilter, injectIncludeUsage, isUsageOnlyEvent } from '../plugins/concerns/metering/include-usage.js'
import { cut } from './helpers/chunks.js'

const inject = (text: string): string | null => injectIncludeUsage(Buffer.from(text))?.toString('utf8') ?? null

/** The original with exactly `inserted` put in at `at` in place of `removed`. */
const spliced = (original: string, at: number, inserted: string, removed = ''): string =>
  original.slice(0, at) + inserted + original.slice(at + removed.length)

t.test('adds stream_options after the opening brace when absent', async (t) => {
  const body = '{"model":"openai/gpt-4o","stream":true,"seed":12345678901234567890,"temperature":0.70,"messages":[{"role":"user","content":"hi \\"there\\" ünïcode"}]}'
  const out = inject(body)
  t.equal(out, spliced(body, 1, '"stream_options":{"include_usage":true},'), 'only the edit differs')
  const parsed = JSON.parse(out ?? '') as Record<string, unknown>
  t.same(parsed.stream_options, { include_usage: true })
  t.ok(out?.includes('"seed":12345678901234567890,"temperature":0.70'), 'number literals survive byte for byte')
})

t.test('keeps pretty-printing and whitespace around the edit', async (t) => {
  const body = ' \n{\n  "stream" : true ,\n  "messages" : [ ]\n}\n'
  t.equal(inject(body), spliced(body, body.indexOf('{') + 1, '"stream_options":{"include_usage":true},'), 'only the edit differs')
})

t.test('inserts include_usage into an existing stream_options object', async (t) => {
  const body = '{"stream":true,"stream_options":{ "chunk_size": 1e400 },"n":1}'
  t.equal(inject(body), spliced(body, body.indexOf('{ "chunk') + 1, '"include_usage":true,'), 'only the edit differs')
  const empty = '{"stream":true,"stream_options":{  }}'
  t.equal(inject(empty), spliced(empty, empty.indexOf('{  }') + 1, '"include_usage":true'), 'only the edit differs')
  t.same(JSON.parse(inject(empty) ?? ''), { stream: true, stream_options: { include_usage: true } })
})

t.test('rewrites include_usage false (or null) to true', async (t) => {
  const body = '{"stream_options":{"include_usage" :  false,"x":[1,2]},"stream":true}'
  const at = body.indexOf('false')
  t.equal(inject(body), spliced(body, at, 'true', 'false'), 'only the edit differs')
  const nul = '{"stream":true,"stream_options":{"include_usage":null}}'
  t.equal(inject(nul), spliced(nul, nul.indexOf('null'), 'true', 'null'), 'only the edit differs')
  const optsNull = '{"stream":true,"stream_options":null}'
  t.equal(inject(optsNull), spliced(optsNull, optsNull.indexOf('null'), '{"include_usage":true}', 'null'), 'only the edit differs')
})

t.test('returns null when nothing is needed or the body cannot be edited safely', async (t) => {
  const cases: Array<[string, string]> = [
    ['the client asked already', '{"stream":true,"stream_options":{"include_usage":true}}'],
    ['not streaming', '{"stream":false,"messages":[]}'],
    ['no stream field', '{"messages":[]}'],
    ['stream as a string', '{"stream":"true"}'],
    ['stream_options not an object', '{"stream":true,"stream_options":"yes"}'],
    ['an escaped key asking already', '{"stream":true,"stream\\u005foptions":{"include\\u005fusage":true}}'],
    ['not JSON', 'stream=true'],
    ['an array', '[{"stream":true}]'],
    ['truncated', '{"stream":true,"messages":[{"content":"a'],
    ['trailing bytes', '{"stream":true} {}'],
    ['empty', '']
  ]
  for (const [name, body] of cases) t.equal(inject(body), null, name)
})

t.test('keys written with escapes are read as JSON.parse reads them', async (t) => {
  const body = '{"stream":true,"stream\\u005foptions":{"include\\u005fusage":false}}'
  const out = inject(body)
  t.equal(out, spliced(body, body.indexOf('false'), 'true', 'false'), 'only the edit differs')
  t.same(JSON.parse(out ?? ''), { stream: true, stream_options: { include_usage: true } })
})

t.test('nested stream_options and include_usage keys are left alone', async (t) => {
  const body = '{"messages":[{"role":"user","content":"x","stream_options":{"include_usage":false}}],"metadata":{"stream":true,"include_usage":false},"stream":true}'
  const out = inject(body)
  t.equal(out, spliced(body, 1, '"stream_options":{"include_usage":true},'), 'only the edit differs')
  const parsed = JSON.parse(out ?? '') as { messages: Array<Record<string, unknown>>, metadata: unknown }
  t.same(parsed.messages[0]?.stream_options, { include_usage: false })
  t.same(parsed.metadata, { stream: true, include_usage: false })
})

t.test('duplicate keys: the last one, which the upstream reads, is edited', async (t) => {
  const body = '{"stream":true,"stream_options":{"include_usage":true},"stream_options":{"include_usage":false}}'
  const out = inject(body)
  t.equal(out, spliced(body, body.lastIndexOf('false'), 'true', 'false'), 'only the edit differs')
  t.same(JSON.parse(out ?? ''), { stream: true, stream_options: { include_usage: true } })
  t.equal(inject('{"stream":false,"stream":true}')?.startsWith('{"stream_options":{"include_usage":true},'), true)
})

const streamOptions = fc.option(fc.dictionary(fc.string({ maxLength: 6 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 }).chain((o) =>
  fc.constantFrom(undefined, true, false, null).map((iu) => iu === undefined ? o : { ...o, include_usage: iu })), { nil: undefined })

const EDITS: Array<[string, string]> = [
  ['', '"stream_options":{"include_usage":true},'], ['', '"include_usage":true,'], ['', '"include_usage":true'],
  ['false', 'true'], ['null', 'true'], ['null', '{"include_usage":true}']
]

t.test('property: the result parses to the body with include_usage true, everything else untouched', async (t) => {
  fc.assert(fc.property(
    fc.dictionary(fc.string({ unit: 'binary', maxLength: 8 }).filter((k) => k !== 'stream' && k !== 'stream_options'), fc.jsonValue({ maxDepth: 3 }), { maxKeys: 5 }),
    streamOptions,
    fc.constantFrom(undefined, 2, '\t', '\r\n '),
    (rest, options, indent) => {
      const body: Record<string, unknown> = { ...rest, stream: true }
      if (options !== undefined) body.stream_options = options
      const text = JSON.stringify(body, null, indent)
      const out = inject(text)
      const asked = options !== undefined && options.include_usage === true
      if (asked) {
        if (out !== null) throw new Error('edited a body that already asks')
        return
      }
      if (out === null) throw new Error(`not edited: ${text}`)
      const want = { ...body, stream_options: { ...(options ?? {}), include_usage: true } }
      if (JSON.stringify(JSON.parse(out)) !== JSON.stringify(JSON.parse(JSON.stringify(want)))) {
        // key order can differ (the edit inserts at the front); compare as sorted objects
        const norm = (v: unknown): unknown => JSON.parse(JSON.stringify(v, (_k, x: unknown) =>
          x !== null && typeof x === 'object' && !Array.isArray(x) ? Object.fromEntries(Object.entries(x).sort(([a], [b]) => a < b ? -1 : 1)) : x))
        if (JSON.stringify(norm(JSON.parse(out))) !== JSON.stringify(norm(want))) throw new Error(`${out} is not ${JSON.stringify(want)}`)
      }
      // Byte-exactness: the output is the input with one of the known edits at one place.
      let head = 0
      while (head < text.length && text[head] === out[head]) head++
      const exact = EDITS.some(([removed, inserted]) => {
        for (let at = Math.max(0, head - inserted.length); at <= head; at++) {
          if (text.startsWith(removed, at) && out === text.slice(0, at) + inserted + text.slice(at + removed.length)) return true
        }
        return false
      })
      if (!exact) throw new Error(`not a single known edit: ${text} → ${out}`)
    }
  ), { numRuns: 500 })
  t.pass('500 runs')
})

// ---- the chunk filter ----

const chunk = (choices: unknown[], usage: unknown = null): string =>
  `data: ${JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model: 'gpt-4o', choices, usage })}`
const USAGE_CHUNK = 'data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15,"prompt_tokens_details":{"cached_tokens":0}}}'

function events (eol: string): string[] {
  return [
    chunk([{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }]) + eol + eol,
    `: comment${eol}` + chunk([{ index: 0, delta: { content: 'Grüße 🌍' }, finish_reason: null }]) + eol + eol,
    chunk([{ index: 0, delta: {}, finish_reason: 'stop' }]) + eol + eol,
    USAGE_CHUNK + eol + eol,
    `data: [DONE]${eol}${eol}`
  ]
}

async function filter (chunks: readonly Buffer[]): Promise<string> {
  const out: Buffer[] = []
  const f = createUsageChunkFilter()
  for await (const piece of Readable.from(chunks, { objectMode: false }).pipe(f)) out.push(piece as Buffer)
  return Buffer.concat(out).toString('utf8')
}

t.test('drops exactly the usage-only chunk and keeps [DONE]', async (t) => {
  for (const eol of ['\n', '\r\n', '\r']) {
    const parts = events(eol)
    const want = parts.filter((_, i) => i !== 3).join('')
    t.equal(await filter([Buffer.from(parts.join(''))]), want, `eol ${JSON.stringify(eol)}`)
    const body = Buffer.from(parts.join(''))
    t.equal(await filter([...body].map((b) => Buffer.from([b]))), want, `eol ${JSON.stringify(eol)}, byte by byte`)
  }
})

t.test('property: any split gives the input minus the usage chunk, byte for byte', async (t) => {
  await fc.assert(fc.asyncProperty(fc.constantFrom('\n', '\r\n', '\r'), fc.array(fc.nat(), { maxLength: 30 }), async (eol, points) => {
    const parts = events(eol)
    const body = Buffer.from(parts.join(''))
    const got = await filter(cut(body, points.map((p) => p % (body.length + 1))))
    const want = parts.filter((_, i) => i !== 3).join('')
    if (got !== want) throw new Error(`${JSON.stringify(got)} !== ${JSON.stringify(want)}`)
  }), { numRuns: 300 })
  t.pass('300 runs')
})

t.test('keeps chunks that are not the usage-only chunk', async (t) => {
  const kept = [
    `${chunk([{ index: 0, delta: { content: 'a' } }], { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 })}\n\n`, // usage with choices
    `${chunk([], null)}\n\n`, // no usage
    'data: {"error":{"message":"the \\"usage\\" is wrong","type":"server_error"}}\n\n',
    'event: error\ndata: {"error":{"code":"PROVIDER_STREAM_INTERRUPTED"}}\n\n',
    'data: {"choices":[],"usage":'
  ]
  const body = kept.join('')
  t.equal(await filter([Buffer.from(body)]), body)
})

t.test('a usage chunk without its closing blank line is still dropped at the end', async (t) => {
  t.equal(await filter([Buffer.from(`data: [DONE]\n\n${USAGE_CHUNK}\n`)]), 'data: [DONE]\n\n')
})

t.test('a big event streams through without being held', async (t) => {
  const big = `data: ${JSON.stringify({ choices: [{ delta: { content: 'x'.repeat(200_000) } }], usage: null })}\n\n`
  const f = createUsageChunkFilter()
  const seen: number[] = []
  f.on('data', (b: Buffer) => seen.push(b.length))
  const body = Buffer.from(big)
  for (const piece of cut(body, [70_000, 140_000])) f.write(piece)
  await new Promise((resolve) => setImmediate(resolve))
  t.ok(seen.reduce((a, b) => a + b, 0) >= 140_000, 'bytes of the unfinished event were already passed on')
  f.end()
  await new Promise((resolve) => f.on('end', resolve))
  t.equal(seen.reduce((a, b) => a + b, 0), body.length)
})

t.test('isUsageOnlyEvent', async (t) => {
  t.ok(isUsageOnlyEvent(Buffer.from(`${USAGE_CHUNK}\n\n`)))
  t.notOk(isUsageOnlyEvent(Buffer.from('data: [DONE]\n\n')))
  t.notOk(isUsageOnlyEvent(Buffer.from('data: {"choices":[],"usage":null}\n\n')))
  t.notOk(isUsageOnlyEvent(Buffer.from('data: {"choices":[{}],"usage":{"prompt_tokens":1}}\n\n')))
})
