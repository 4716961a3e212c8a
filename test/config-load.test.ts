// loadConfig: the default config, defaults, freezing, ${ENV} expansion, includes, hash.
/* eslint-disable no-template-curly-in-string -- these strings are ${VAR} references for the config loader to expand */
import t from 'tap'
import { mkdtempSync, readFileSync, rmSync, writeFileSync, cpSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { ConfigError, expandString, formatProblem } from '../plugins/foundation/config/index.js'
import { checkConfig, loadConfig } from '../plugins/apps/gateway/config.js'
import { ROOT } from './helpers/paths.js'
import { findNode, readSources } from '../plugins/foundation/config/sources.js'
import { isScalar } from 'yaml'

const root = ROOT
const valid = join(root, 'test', 'fixtures', 'config', 'valid')
const minimal = join(valid, 'minimal.yaml')
const withIncludes = join(valid, 'with-includes.yaml')

/** A scratch directory holding a copy of the minimal config, edited by `edit`. */
function scratch (t: { teardown: (fn: () => void) => unknown }, edit: (text: string) => string = (s) => s): string {
  const dir = mkdtempSync(join(tmpdir(), 'gateway-config-'))
  t.teardown(() => { rmSync(dir, { recursive: true, force: true }) })
  const file = join(dir, 'gateway.yaml')
  writeFileSync(file, edit(readFileSync(minimal, 'utf8')))
  return file
}

t.test('the default gateway.yaml loads', async (t) => {
  const { config, files, hash } = loadConfig(join(root, 'gateway.yaml'), {})
  t.same(files, [join(root, 'gateway.yaml'), join(root, 'config', 'errors.yaml')])
  t.match(hash, /^[0-9a-f]{64}$/)
  t.equal(config.server.port, 8080)
  t.equal(config.server.host, '0.0.0.0')
  t.equal(config.providers.openai?.base_url, 'https://api.openai.com')
  t.equal(config.providers.openai?.headers.authorization, 'Bearer ')
  t.ok(config.routes.length > 0)
  t.ok(config.models.some((m) => m.id === 'openai/gpt-4o'))
  t.ok(config.errors.catalogue.some((e) => e.code === 'MODEL_NOT_FOUND'), 'the included error catalogue is merged')
})

t.test('provider endpoints and keys come from the environment', async (t) => {
  const { config } = loadConfig(join(root, 'gateway.yaml'), {
    OPENAI_BASE_URL: 'http://127.0.0.1:4010',
    OPENAI_API_KEY: 'sk-test',
    PORT: '3000'
  })
  t.equal(config.providers.openai?.base_url, 'http://127.0.0.1:4010')
  t.equal(config.providers.openai?.headers.authorization, 'Bearer sk-test')
  t.equal(config.server.port, 3000)
})

t.test('defaults are filled', async (t) => {
  const { config } = loadConfig(minimal, {})
  t.same(config.server, {
    docs_base_url: 'https://docs.example.test/errors',
    port: 8080,
    host: '0.0.0.0',
    body_limit_bytes: 26214400,
    content_language: 'en',
    json_body_limit_bytes: 10485760,
    json_max_depth: 64,
    multipart_max_parts: 64,
    multipart_max_fields: 48,
    multipart_max_files: 16,
    drain_timeout_ms: 30000,
    client_write_stall_ms: 30000,
    request_timeout_ms: 120000,
    headers_timeout_ms: 20000,
    connection_idle_timeout_ms: 300000,
    keep_alive_timeout_ms: 72000,
    max_connections_per_address: 1024,
    shutdown_grace_ms: 30000,
    trust_proxy: []
  })
  const route = config.routes[0]
  t.same(route?.aliases, [])
  t.same(route?.body, ['json'])
  t.equal(route?.response, 'auto')
  const model = config.models[0]
  t.same(model?.capabilities, [])
  t.same(model?.fallbacks, [])
  t.same(config.providers.openai, {
    base_url: 'https://api.openai.test',
    headers: {},
    timeout_ms: 60000,
    answer_timeout_ms: 600000,
    body_timeout_ms: 120000,
    connect_timeout_ms: 10000,
    drain_on_disconnect: false,
    connections: 256,
    allow_request_headers: ['accept'],
    allow_response_headers: ['content-type', 'content-length', 'retry-after'],
    allow_query_params: []
  })
  t.same(config.pools.openai, [{ provider: 'openai', weight: 1 }])
  t.same(config.upstream, { max_tries: 2, retry_statuses: [429, 500, 502, 503, 504], breaker_failures: 3, breaker_cooldown_ms: 10000, health_check_interval_ms: 0 })
  t.same(config.families.chat, { envelope: 'chat', prefixes: [] })
  t.same(config.auth.strip_headers, ['authorization', 'x-api-key', 'x-genai-api-key', 'x-goog-api-key', 'cookie', 'proxy-authorization', 'x-idempotency-key'])
  t.equal(config.auth.unknown_key_ttl_ms, 5000)
  t.equal(config.auth.unknown_key_cache_max, 100000)
  t.same(config.admin, { host: '127.0.0.1', port: 8081, token_min_length: 32, max_failures: 10, failure_window_ms: 60000 })
  t.same(config.errors.type_by_status, { chat: {}, messages: {}, genai: {} })
})

t.test('the config is deep-frozen', async (t) => {
  const { config } = loadConfig(minimal, {})
  t.ok(Object.isFrozen(config))
  t.ok(Object.isFrozen(config.models[0]?.pricing))
  t.ok(Object.isFrozen(config.routes[0]?.body))
  t.throws(() => { (config.server as { port: number }).port = 1 }, TypeError)
  t.throws(() => { (config.models[0]?.fallbacks as string[]).push('openai/other') }, TypeError)
  t.throws(() => { delete (config.providers as Record<string, unknown>).openai }, TypeError)
  t.throws(() => { (config.errors.catalogue[0] as { message: string }).message = 'changed' }, TypeError)
})

t.test('${ENV} expansion', async (t) => {
  t.test('a plain ${PORT:-8080} becomes a number from the default and from the environment', async (t) => {
    const fromDefault = loadConfig(withIncludes, {}).config.server
    t.equal(fromDefault.port, 8080)
    t.equal(fromDefault.host, '127.0.0.1')
    const fromEnv = loadConfig(withIncludes, { PORT: '9999', HOST: '::1' }).config.server
    t.equal(fromEnv.port, 9999)
    t.equal(typeof fromEnv.port, 'number')
    t.equal(fromEnv.host, '::1')
  })

  t.test('an empty variable takes the default; a set one wins', async (t) => {
    t.equal(loadConfig(withIncludes, { PORT: '' }).config.server.port, 8080)
    t.equal(loadConfig(withIncludes, { DOCS_URL: 'https://errors.example.test' }).config.server.docs_base_url, 'https://errors.example.test')
  })

  t.test('a quoted reference stays a string, so the schema rejects it for a port', async (t) => {
    const file = scratch(t, (s) => s.replace('server:\n', 'server:\n  port: "${PORT:-8080}"\n'))
    t.same(checkConfig(file, {}).map((p) => `${p.line}:${p.column} ${p.path} ${p.message}`), [
      '3:9 server.port must be an integer; got "8080"'
    ])
  })

  t.test('a number in the environment where a string is wanted is a schema problem', async (t) => {
    const file = scratch(t, (s) => s.replace('upstream_model: gpt-4o-mini', 'upstream_model: ${UPSTREAM}'))
    // A value from the environment is named by its variable, never shown (it may be a secret).
    t.same(checkConfig(file, { UPSTREAM: '42' }).map((p) => p.message), ['must be a string; got a number from ${UPSTREAM}'])
    t.equal(loadConfig(file, { UPSTREAM: 'gpt-4o-mini-2024' }).config.models[0]?.upstream_model, 'gpt-4o-mini-2024')
  })

  t.test('a missing variable without default is a problem at the reference', async (t) => {
    const file = scratch(t, (s) => s.replace('docs_base_url: https://docs.example.test/errors', 'docs_base_url: https://${DOCS_HOST}/errors'))
    const problems = checkConfig(file, {})
    t.same(problems, [{
      file,
      line: 3,
      column: 26,
      path: 'server.docs_base_url',
      message: 'environment variable DOCS_HOST is not set and ${DOCS_HOST} has no default'
    }])
    t.throws(() => loadConfig(file, {}), ConfigError)
    t.equal(loadConfig(file, { DOCS_HOST: 'docs.example.test' }).config.server.docs_base_url, 'https://docs.example.test/errors')
  })

  t.test('a text is parsed once: its loads share the document, which each leaves as written', async (t) => {
    const file = scratch(t, (s) => s.replace('server:\n', 'server:\n  port: ${PORT:-8080}\n'))
    const first = readSources(file, { PORT: '1111' })
    const second = readSources(file, { PORT: '2222' })
    t.equal(first.files[0]?.doc, second.files[0]?.doc, 'the second load reuses the first one\'s parse')
    const portOf = (merged: Record<string, unknown>): unknown => (merged['server'] as Record<string, unknown>)['port']
    t.same([portOf(first.merged), portOf(second.merged)], [1111, 2222], 'each with its own environment')
    const port = findNode(second.files[0]!.doc, ['server', 'port'])
    t.ok(port.exact && isScalar(port.node) && port.node.value === '${PORT:-8080}', 'the shared document holds the scalar as written')
    writeFileSync(file, readFileSync(file, 'utf8').replace('${PORT:-8080}', '${PORT:-8081}'))
    const edited = readSources(file, {})
    t.not(edited.files[0]?.doc, second.files[0]?.doc, 'an edited file is parsed again')
    t.equal(portOf(edited.merged), 8081)
  })

  t.test('expandString', async (t) => {
    t.same(expandString('a ${X} b', { X: '1' }), { value: 'a 1 b', problems: [] })
    t.same(expandString('${X:-d}', {}), { value: 'd', problems: [] })
    t.same(expandString('${X:-}', {}), { value: '', problems: [] })
    t.same(expandString('${X}', { X: '' }), { value: '', problems: [] }, 'set but empty is set')
    t.same(expandString('$${X} and ${X}', { X: 'v' }), { value: '${X} and v', problems: [] }, '$${ is a literal ${')
    t.same(expandString('${A}${B:-b}', { A: 'a' }), { value: 'ab', problems: [] })
    t.match(expandString('${X', {}).problems, [{ message: /unterminated/ }])
    t.match(expandString('${1X}', {}).problems, [{ message: /malformed/ }])
    t.match(expandString('${NOPE}', {}).problems, [{ ref: '${NOPE}', message: /NOPE is not set/ }])
  })
})

t.test('include merges top-level keys of included files', async (t) => {
  const { config, files } = loadConfig(withIncludes, {})
  t.equal(files[0], withIncludes)
  t.equal(files.length, 9)
  t.ok(files.includes(join(valid, '..', 'parts', 'errors.yaml')))
  t.same(Object.keys(config).sort(), ['admin', 'auth', 'console', 'errors', 'families', 'jobs', 'limits', 'models', 'observability', 'operations', 'pools', 'providers', 'routes', 'server', 'upstream', 'wallet'], 'wallet, jobs, admin, console, observability, upstream and operation defaults are filled even when the sections are absent')
  t.equal(config.routes.length, 2)
  t.same(config.models[0]?.fallbacks, ['openai/gpt-4o-mini'])
  t.notOk('include' in config, 'include is not part of the loaded config')
})

t.test('a key defined twice across files is a problem', async (t) => {
  const file = scratch(t)
  writeFileSync(join(dirname(file), 'more.yaml'), 'limits:\n  default_tier: free\n  tiers: {}\n')
  writeFileSync(file, 'include: [more.yaml]\n' + readFileSync(file, 'utf8'))
  const problems = checkConfig(file, {}).map(formatProblem)
  // minimal.yaml's `limits:` is on its line 24 (its model declares its facts), 25 after the include line.
  t.same(problems, [`${join(dirname(file), 'more.yaml')}:1:1  limits  "limits" is already defined at ${file}:25:1`])
})

t.test('ConfigError lists every problem', async (t) => {
  const file = scratch(t, (s) => s.replace('status: active', 'status: live').replace('default_tier: free', 'default_tier: gold'))
  const err = t.throws(() => loadConfig(file, {})) as ConfigError
  t.type(err, ConfigError)
  t.equal(err.problems.length, 2)
  t.match(err.message, /models\[0\]\.status/)
  t.match(err.message, /and 1 more/)
})

t.test('the hash', async (t) => {
  const base = loadConfig(minimal, {}).hash
  t.equal(loadConfig(minimal, {}).hash, base, 'same file, same hash')

  const comments = scratch(t, (s) => '# a comment\n' + s.replace('  chat: { envelope: chat }', '  chat:\n    envelope: chat  # flow to block'))
  t.equal(loadConfig(comments, {}).hash, base, 'comments and layout do not count')

  const explicit = scratch(t, (s) => s.replace('[{ provider: openai }]', '[{ weight: 1, provider: openai }]'))
  t.equal(loadConfig(explicit, {}).hash, base, 'a default written out and key order do not count')

  const changed = scratch(t, (s) => s.replace('"0.60"', '"0.61"'))
  t.not(loadConfig(changed, {}).hash, base, 'a changed price changes the hash')

  const a = loadConfig(withIncludes, {}).hash
  t.equal(loadConfig(withIncludes, { UNRELATED: 'x' }).hash, a, 'unrelated env does not count')
  t.not(loadConfig(withIncludes, { PORT: '9999' }).hash, a, 'an expanded value counts')

  const dir = mkdtempSync(join(tmpdir(), 'gateway-config-'))
  t.teardown(() => { rmSync(dir, { recursive: true, force: true }) })
  cpSync(join(valid, '..'), dir, { recursive: true })
  t.equal(loadConfig(join(dir, 'valid', 'with-includes.yaml'), {}).hash, a, 'the location of the files does not count')
  const errors = join(dir, 'parts', 'errors.yaml')
  writeFileSync(errors, readFileSync(errors, 'utf8').replace('An API key is required.', 'Send an API key.'))
  t.not(loadConfig(join(dir, 'valid', 'with-includes.yaml'), {}).hash, a, 'a change in an included file counts')
})
