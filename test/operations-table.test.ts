// The compiled operations table: its built-in entries keep the behaviour the hard-coded tables
// had (meter, job role and namespace, usage chunk, video parts, image counts), gateway.yaml
// entries replace or add, and a config whose priced model would serve an operation free does
// not load.
import t from 'tap'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ConfigError } from '../plugins/foundation/config/index.js'
import { loadConfig } from '../plugins/apps/gateway/config.js'
import { compileOperations, type CompiledOperation } from '../plugins/foundation/operations/index.js'
import { compileRoutes } from '../plugins/foundation/routes/compile.js'
import { REPO_CONFIG, mockEnv } from './helpers/gateway.js'
import { repoPath } from './helpers/paths.js'

const fixtures = repoPath('test', 'fixtures', 'config')
const minimal = join(fixtures, 'valid', 'minimal.yaml')

/**
 * What the code did before the table, copied from the removed constants: meter.ts (IMAGE_OPERATIONS,
 * JOB_OPERATIONS, JOB_POLL_OPERATIONS, the images.edits / audio cases), token-dialects.ts (the
 * dialect switch), settle.ts (JOB_KIND, JOB_POLLS), wallet-stage.ts (JOB_OPERATIONS),
 * capabilities.ts (NO_VIDEO_OPERATIONS), worst-case.ts (IMAGE_OPERATIONS), forward-stage.ts
 * (only chat.completions gets the usage chunk) and the routes' `job:` in gateway.yaml.
 */
const OLD: Record<string, { meter: string, job: string | null, usageChunk: boolean, videoParts: boolean, countIsImages: boolean }> = {
  'chat.completions': { meter: 'tokens/chat', job: null, usageChunk: true, videoParts: false, countIsImages: false },
  responses: { meter: 'tokens/responses', job: null, usageChunk: false, videoParts: false, countIsImages: false },
  messages: { meter: 'tokens/messages', job: null, usageChunk: false, videoParts: false, countIsImages: false },
  'genai.generateContent': { meter: 'tokens/genai', job: null, usageChunk: false, videoParts: true, countIsImages: false },
  'genai.streamGenerateContent': { meter: 'tokens/genai', job: null, usageChunk: false, videoParts: true, countIsImages: false },
  'images.generations': { meter: 'images', job: null, usageChunk: false, videoParts: true, countIsImages: true },
  'images.edits': { meter: 'images/per-call', job: null, usageChunk: false, videoParts: true, countIsImages: true },
  'genai.generateImages': { meter: 'images', job: null, usageChunk: false, videoParts: true, countIsImages: true },
  'genai.editImage': { meter: 'images', job: null, usageChunk: false, videoParts: true, countIsImages: true },
  'genai.upscaleImage': { meter: 'images', job: null, usageChunk: false, videoParts: true, countIsImages: true },
  'audio.transcriptions': { meter: 'transcription', job: null, usageChunk: false, videoParts: true, countIsImages: false },
  'audio.speech': { meter: 'speech', job: null, usageChunk: false, videoParts: true, countIsImages: false },
  'videos.create': { meter: 'job', job: 'create video', usageChunk: false, videoParts: true, countIsImages: false },
  'videos.get': { meter: 'job_poll', job: 'poll video', usageChunk: false, videoParts: true, countIsImages: false },
  'videos.content': { meter: 'none', job: 'content video', usageChunk: false, videoParts: true, countIsImages: false },
  'music.create': { meter: 'job', job: 'create music', usageChunk: false, videoParts: true, countIsImages: false },
  'jobs.get': { meter: 'job_poll', job: 'poll music', usageChunk: false, videoParts: true, countIsImages: false },
  'genai.generateVideos': { meter: 'job', job: 'create operation', usageChunk: false, videoParts: true, countIsImages: false },
  // Added with the jobs concern (the operation the @google/genai SDK polls); no hard-coded table had it.
  'genai.operations.get': { meter: 'job_poll', job: 'poll operation', usageChunk: false, videoParts: true, countIsImages: false }
}

function described (op: CompiledOperation): typeof OLD[string] {
  const m = op.meter
  const meter = m.kind === 'tokens' ? `tokens/${m.dialect}` : m.kind === 'images' ? (m.perCall ? 'images/per-call' : 'images') : m.kind
  return {
    meter,
    job: op.job === null ? null : `${op.job.role} ${op.job.namespace}`,
    usageChunk: op.usageChunk,
    videoParts: op.videoParts,
    countIsImages: op.bounds.countIsImages
  }
}

t.test('the built-in entries equal the old hard-coded behaviour for every operation of the spec', async (t) => {
  const table = compileOperations({ operations: {} })
  t.same(table.list().map((op) => op.name).sort(), Object.keys(OLD).sort(), 'one entry per operation, no more')
  for (const [name, old] of Object.entries(OLD)) {
    const op = table.get(name)
    if (op === undefined) { t.fail(`${name} missing`); continue }
    t.same(described(op), old, name)
  }
})

t.test('every route of the shipped gateway.yaml compiles to its operation, job role included', async (t) => {
  const { config } = loadConfig(REPO_CONFIG, { ...mockEnv('http://127.0.0.1:9'), PORT: '0' })
  const routes = compileRoutes(config)
  t.equal(routes.plans.length, config.routes.length)
  t.same(new Set(config.routes.map((r) => r.operation)), new Set(Object.keys(OLD)), 'the routes cover every operation of the spec')
  for (const plan of routes.plans) {
    t.equal(plan.op.name, plan.operation, plan.id)
    t.same(described(plan.op), OLD[plan.operation], `${plan.id}: the plan carries the same facts`)
    const declared = config.routes.find((r) => `${r.method} ${r.path}` === plan.id)?.job
    t.equal(plan.job, declared, `${plan.id}: job role as the route declared it`)
  }
})

t.test('the loader merges the built-in entries, validated and defaults filled, into the hashed config', async (t) => {
  const { config } = loadConfig(minimal, {})
  t.same(Object.keys(config.operations ?? {}).sort(), Object.keys(OLD).sort())
  t.same(config.operations?.['genai.upscaleImage'], {
    meter: { kind: 'images' },
    bounds: { count: ['parameters.sampleCount'], count_is_images: true, max_tokens: [], job_units: [] },
    usage_chunk: false,
    video_parts: true
  }, 'schema defaults filled in a built-in entry')
  t.same(compileOperations(config).list(), compileOperations({ operations: {} }).list(), 'compiling the loaded config or the built-ins alone agrees')
})

function scratch (t: { teardown: (fn: () => void) => unknown }, extra: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'ops-table-'))
  t.teardown(() => { rmSync(dir, { recursive: true, force: true }) })
  const file = join(dir, 'gateway.yaml')
  writeFileSync(file, readFileSync(minimal, 'utf8') + extra)
  return file
}

t.test('an entry in gateway.yaml replaces the built-in one whole, a new name adds one', async (t) => {
  const file = scratch(t, [
    'operations:',
    '  chat.completions: { meter: { kind: tokens, dialect: responses } }',
    '  embeddings: { meter: { kind: tokens, dialect: chat }, bounds: { max_tokens: [dimensions] } }',
    ''
  ].join('\n'))
  const { config, hash } = loadConfig(file, {})
  const ops = compileOperations(config)
  const chat = ops.get('chat.completions')
  t.same(chat?.meter, { kind: 'tokens', dialect: 'responses' })
  t.equal(chat?.usageChunk, false, 'replaced whole: the built-in usage_chunk is gone')
  t.same(chat?.bounds.maxTokens, [], 'replaced whole: the built-in bounds are gone')
  t.same(ops.get('embeddings')?.bounds.maxTokens, [{ name: 'dimensions', keys: ['dimensions'] }])
  t.ok(ops.get('messages'), 'other built-in entries stay')
  t.not(hash, loadConfig(minimal, {}).hash, 'operations count in the hash')
})

t.test('regression: a route and operation added only in gateway.yaml is refused, not served free', async (t) => {
  const file = scratch(t, '')
  // The minimal config's `routes:` and `models:` get the new endpoint and the model that serves it.
  const text = readFileSync(minimal, 'utf8')
    .replace('routes:\n', 'routes:\n  - { path: /v1/embeddings, method: POST, family: chat, operation: embeddings }\n')
    .replace('models:\n', [
      'models:',
      '  - id: openai/text-embedding-3-small',
      '    status: active',
      '    pool: openai',
      '    upstream_model: text-embedding-3-small',
      '    operations: { embeddings: { path: /v1/embeddings } }',
      '    pricing: { unit: token, input: "0.02", output: "0.02", per: 1000000 }',
      ''
    ].join('\n'))
  writeFileSync(file, text)
  const err = t.throws(() => loadConfig(file, {})) as ConfigError
  t.type(err, ConfigError)
  t.same(err.problems.map((p) => [p.line, p.column, p.path]), [
    [9, 68, 'routes[0].operation'],
    [20, 19, 'models[0].operations.embeddings']
  ])
  t.match(err.problems[0]?.message, /operation "embeddings" is not declared in operations/)
  t.match(err.problems[1]?.message, /operation "embeddings" has no meter/)
  const lines = text.split('\n')
  t.equal(lines[8]?.slice(67, 77), 'embeddings', 'line 9, column 68 is the route\'s operation')
  t.equal(lines[19]?.slice(18, 28), 'embeddings', 'line 20, column 19 is the model\'s operation key')

  // Declaring how it is metered is all it takes.
  writeFileSync(file, text + 'operations:\n  embeddings: { meter: { kind: tokens, dialect: chat } }\n')
  t.equal(loadConfig(file, {}).config.operations?.embeddings?.meter.kind, 'tokens')
})
