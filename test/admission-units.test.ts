// The pieces of the admission refusals on their own: the multipart item guard fed in every
// possible chunking, the magic-number table, the content policy, the config check of patterns,
// and the log line of a content-policy refusal (the rule's name, never the content).
import t from 'tap'
import { Writable } from 'node:stream'
import { admissionPlugin, compileAdmission, sniffFormat } from '../plugins/concerns/admission/index.js'
import { ContentPolicy } from '../plugins/concerns/admission/policy.js'
import { loadConfig } from '../plugins/apps/gateway/config.js'
import { MultipartItemGuard } from '../plugins/foundation/request/body-guards.js'
import { mockEnv, startTestGateway } from './helpers/gateway.js'
import { modelOf, writeTestConfig } from './helpers/test-config.js'
import { multipartBody, wavFile } from './helpers/wire.js'
import { repoPath } from './helpers/paths.js'

/** Feeds `body` to a fresh guard in chunks of `size`; the field refused, or null. */
function feed (body: Buffer, boundary: string, caps: Record<string, number>, size: number): string | null {
  const guard = new MultipartItemGuard(boundary, caps)
  for (let at = 0; at < body.length; at += size) {
    if (!guard.push(body.subarray(at, at + size))) return guard.field
  }
  return null
}

t.test('MultipartItemGuard: a capped file part over its cap is seen whatever the chunking', async (t) => {
  const boundary = 'b0undary'
  const form = (fileBytes: number, name = 'file', filename: string | undefined = 'a.wav'): Buffer => multipartBody([
    { name: 'model', value: 'openai/whisper-1' },
    { name, value: Buffer.alloc(fileBytes, 0x2d), ...(filename === undefined ? {} : { filename }), contentType: 'audio/wav' },
    { name: 'prompt', value: 'x'.repeat(300) }
  ], boundary).body
  for (const size of [1, 2, 3, 7, 13, 64, 100, 1000, 100000]) {
    t.equal(feed(form(101), boundary, { file: 100 }, size), 'file', `101 bytes over a 100-byte cap, chunks of ${size}`)
    t.equal(feed(form(100), boundary, { file: 100 }, size), null, `exactly 100 bytes pass, chunks of ${size}`)
    // The 300-byte prompt field is no file: its size is not the file cap's business.
    t.equal(feed(form(10), boundary, { file: 100, prompt: 5 }, size), null, `a plain field is not capped as a file, chunks of ${size}`)
  }
  // Content made of near-delimiters (a CRLF, dashes, most of the boundary) is content.
  const near = Buffer.from('\r\n--b0undar\r\n-b0undary\r\n--b0undarx'.repeat(10))
  const tricky = multipartBody([{ name: 'file', value: near, filename: 'x' }], 'b0undary').body
  for (const size of [1, 5, 11, 12, 13, 4096]) {
    t.equal(feed(tricky, boundary, { file: near.length - 1 }, size), 'file', `near-delimiters are counted as content (${near.length} bytes over ${near.length - 1}), chunks of ${size}`)
    t.equal(feed(tricky, boundary, { file: near.length }, size), null, `and ${near.length} bytes fit a ${near.length}-byte cap, chunks of ${size}`)
  }
  t.equal(feed(form(500, 'other'), boundary, { file: 100 }, 64), null, 'a file field without a cap is not limited')
})

t.test('sniffFormat: the table of magic numbers', async (t) => {
  const cases: Array<[string, Buffer, string | null]> = [
    ['png', Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), 'png'],
    ['jpeg', Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0, 0]), 'jpeg'],
    ['gif', Buffer.from('GIF89a'), 'gif'],
    ['webp', Buffer.from('RIFF\x00\x00\x00\x00WEBPVP8 '), 'webp'],
    ['wav', wavFile(10), 'wav'],
    ['mp3 with ID3', Buffer.from('ID3\x04\x00'), 'mp3'],
    ['mp3 frame', Buffer.from([0xff, 0xfb, 0x90, 0x00]), 'mp3'],
    ['flac', Buffer.from('fLaC\x00'), 'flac'],
    ['ogg', Buffer.from('OggS\x00'), 'ogg'],
    ['webm', Buffer.from([0x1a, 0x45, 0xdf, 0xa3, 0x01]), 'webm'],
    ['mp4', Buffer.from('\x00\x00\x00\x18ftypisom'), 'mp4'],
    ['m4a', Buffer.from('\x00\x00\x00\x18ftypM4A '), 'm4a'],
    ['pdf', Buffer.from('%PDF-1.7'), 'pdf'],
    ['text', Buffer.from('hello world'), null],
    ['empty', Buffer.alloc(0), null]
  ]
  for (const [what, bytes, name] of cases) t.equal(sniffFormat(bytes)?.name ?? null, name, what)
})

t.test('ContentPolicy: terms case-insensitive, patterns, first rule named', async (t) => {
  const policy = new ContentPolicy([{ name: 'a', terms: ['Bad.Word'] }, { name: 'b', patterns: ['\\bkey-[0-9]+\\b'] }], 'test')
  t.equal(policy.judge('a BAD.WORD here'), 'a')
  t.equal(policy.judge('badxword'), null, 'a term is literal text, not a pattern')
  t.equal(policy.judge('the KEY-42 is'), 'b')
  t.equal(policy.judge('harmless'), null)
  t.throws(() => new ContentPolicy([{ name: 'broken', patterns: ['(unclosed'] }], 'routes[0]'), /routes\[0\]: content_policy rule broken has an invalid pattern/)
})

t.test('model-gateway check: an invalid pattern and an empty range are config errors', async (t) => {
  const badPattern = writeTestConfig((c) => {
    const r = c.routes[0]
    if (r !== undefined) r.content_policy = [{ name: 'broken', patterns: ['(unclosed'] }]
  })
  t.teardown(badPattern.remove)
  t.throws(() => loadConfig(badPattern.file, mockEnv('http://127.0.0.1:9')), /routes\[0\]\.content_policy\[0\]\.patterns\[0\].*not a valid regular expression/s)
  const badRange = writeTestConfig((c) => {
    modelOf(c, 'openai/gpt-4o').parameters = { temperature: { min: 2, max: 1 } }
  })
  t.teardown(badRange.remove)
  t.throws(() => loadConfig(badRange.file, mockEnv('http://127.0.0.1:9')), /parameters.*min 2 is above max 1/s)
  const good = writeTestConfig((c) => {
    const r = c.routes[0]
    if (r !== undefined) r.content_policy = [{ name: 'fine', patterns: ['(closed)'] }]
  })
  t.teardown(good.remove)
  t.doesNotThrow(() => loadConfig(good.file, mockEnv('http://127.0.0.1:9')), 'a valid pattern loads')
})

t.test('a content-policy refusal logs the rule name, never the content', async (t) => {
  const cfg = writeTestConfig((c) => {
    const r = c.routes.find((x) => x.path === '/v1/chat/completions')
    if (r !== undefined) r.content_policy = [{ name: 'logged-rule', terms: ['zebra-canary'] }]
  })
  t.teardown(cfg.remove)
  const lines: string[] = []
  const stream = new Writable({ write (chunk: Buffer, _enc, done) { lines.push(chunk.toString('utf8')); done() } })
  const gw = await startTestGateway({ configFile: cfg.file, server: { logger: { level: 'info', stream } } })
  t.teardown(() => gw.close())
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...gw.auth },
    body: JSON.stringify({ model: 'openai/gpt-4o', messages: [{ role: 'user', content: 'tell me about zebra-canary stripes' }] })
  })
  await res.arrayBuffer()
  t.equal(res.headers.get('x-gateway-error-code'), 'REQUEST_CONTENT_BLOCKED')
  const log = lines.join('')
  t.match(log, /"rule":"logged-rule"/, 'the rule name is logged')
  t.notMatch(log, /zebra/, 'no part of the content or the term is logged')
  t.notMatch(log, /stripes/, 'the prompt is not logged')
})

t.test('a config that declares no refusal adds no hook: the checks cost nothing where the catalogue declares nothing', async (t) => {
  // The repository gateway.yaml ships each model's context window and service tiers (the
  // providers' facts, checked at the door out of the box); without them it declares no refusal.
  const bare = loadConfig(writeTestConfig((c) => {
    for (const m of c.models) {
      delete m.context_window
      delete m.service_tiers
    }
  }).file, mockEnv('http://127.0.0.1:9')).config
  const none = admissionPlugin(compileAdmission(bare))
  t.same(Object.keys(none), ['name'], 'the repository gateway.yaml without its models\' facts declares none: a plugin with no hook at all')
  const repo = loadConfig(repoPath('gateway.yaml'), mockEnv('http://127.0.0.1:9')).config
  t.type(admissionPlugin(compileAdmission(repo)).resolve, 'function', 'with them, the repository gateway.yaml checks context windows and tiers')
  const declared = loadConfig(writeTestConfig((c) => {
    const raw = c as unknown as { routes: Array<Record<string, unknown>> }
    const route = raw.routes[0] as Record<string, unknown>
    route.content_limits = { prompt_chars: 10 }
  }).file, mockEnv('http://127.0.0.1:9')).config
  t.type(admissionPlugin(compileAdmission(declared)).resolve, 'function', 'one route cap declared: the resolve hook exists')
})
