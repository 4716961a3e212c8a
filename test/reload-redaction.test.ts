// Config problems never echo a value the environment supplied: a provider credential that lands
// in a number field (`timeout_ms: ${MUSIC_API_KEY}`) is named by its variable, never shown, in
// `check`'s output, the reload's 422, the log and the admin readiness report; the public /readyz
// says only ready or not.
/* eslint-disable no-template-curly-in-string -- these strings are ${VAR} references for the config loader to expand */
import { spawn } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import t, { type Test } from 'tap'
import { formatProblem } from '../plugins/foundation/config/index.js'
import { checkConfig, loadConfig } from '../plugins/apps/gateway/config.js'
import { builtCli } from './helpers/built-cli.js'
import { startReloadGateway, testRawConfig } from './helpers/reload.js'
import { writeTestConfig, type RawConfig } from './helpers/test-config.js'
import { stringify } from 'yaml'

t.setTimeout(120_000)

const SECRET = 'prov-music-secret-1234'
const ENV = { MUSIC_API_KEY: SECRET, MUSIC_BASE_URL: 'http://127.0.0.1:9' }

/** Fails when `text` holds the secret or any 7 characters of it in a row. */
function noSecret (t: Test, text: string, where: string): void {
  const parts = new Set<string>()
  for (let i = 0; i + 7 <= SECRET.length; i++) parts.add(SECRET.slice(i, i + 7))
  const found = [...parts].filter((p) => text.includes(p))
  t.same(found, [], `${where}: neither the secret nor any part of it`)
}

/** The credential lands in a number field, and in a field a cross-check quotes. */
function misplaced (c: RawConfig): void {
  const music = c.providers.music
  if (music === undefined) throw new Error('no music provider')
  ;(music as Record<string, unknown>).timeout_ms = '${MUSIC_API_KEY}'
  const model = c.models.find((m) => m.id === 'openai/gpt-4o-mini')
  if (model) model.pool = '${MUSIC_API_KEY}'
}

t.test('check and load: the type expected and the variable, never the value', async (t) => {
  const cfg = writeTestConfig(misplaced)
  t.teardown(cfg.remove)
  const report = checkConfig(cfg.file, { ...process.env, ...ENV }).map(formatProblem)
  const text = report.join('\n')
  t.match(text, /providers\.music\.timeout_ms {2}must be an integer; got a string from \$\{MUSIC_API_KEY\}/, 'the number field: its type and the variable')
  t.match(text, /models\[\d+\]\.pool {2}pool "\$\{MUSIC_API_KEY\}" is not defined in pools/, 'the cross-check quotes the reference, not the value')
  noSecret(t, text, 'the check report')

  // A value written in the file itself is still shown: it is the operator's own text.
  const literal = writeTestConfig((c) => { (c.providers.music as Record<string, unknown>).timeout_ms = 'soon' })
  t.teardown(literal.remove)
  t.match(checkConfig(literal.file, { ...process.env, ...ENV }).map(formatProblem).join('\n'), /must be an integer; got "soon"/, 'a literal value is quoted as before')
  t.throws(() => loadConfig(cfg.file, { ...process.env, ...ENV }), { name: 'ConfigError' }, 'the config does not load')
})

t.test('the built CLI\'s check prints the variable, never the value', async (t) => {
  const cfg = writeTestConfig(misplaced)
  t.teardown(cfg.remove)
  const run = await new Promise<{ code: number | null, out: string }>((resolve, reject) => {
    const child = spawn(process.execPath, [builtCli(), 'check', cfg.file], { env: { PATH: process.env.PATH ?? '', ...ENV }, stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    child.stdout.on('data', (d: Buffer) => { out += d.toString() })
    child.stderr.on('data', (d: Buffer) => { out += d.toString() })
    child.on('error', reject)
    child.on('close', (code) => { resolve({ code, out }) })
  })
  t.equal(run.code, 1, 'check exits 1')
  t.match(run.out, /must be an integer; got a string from \$\{MUSIC_API_KEY\}/, 'names the variable')
  noSecret(t, run.out, 'check\'s output')
})

for (const backend of ['sqlite', 'pg'] as const) {
  t.test(`a reload refused for a credential in a number field: the 422, the log and the readiness reports name the variable only (${backend})`, async (t) => {
    const log: string[] = []
    const gw = await startReloadGateway({ backend, env: ENV, log: { write: (line) => { log.push(line) } } })
    t.teardown(async () => { await gw.close() })
    writeFileSync(gw.file, stringify(testRawConfig(misplaced)))

    const answer = await gw.reload()
    t.equal(answer.status, 422, 'the reload is refused')
    const problems = (answer.json.error as { problems: string[] }).problems
    t.ok(problems.some((p) => p.includes('must be an integer; got a string from ${MUSIC_API_KEY}')), 'the 422 names the variable')
    noSecret(t, JSON.stringify(answer.json), 'the 422')

    const logged = log.join('')
    t.match(logged, /config reload refused/, 'the refusal is logged')
    t.match(logged, /from \$\{MUSIC_API_KEY\}/, 'the log names the variable')
    noSecret(t, logged, 'the log')

    const pub = await fetch(`${gw.url}/readyz`)
    const pubText = await pub.text()
    t.equal(pub.status, 200, 'the old config still serves: ready')
    t.same(JSON.parse(pubText), { status: 'ready' }, 'the public /readyz says only the status')
    noSecret(t, pubText, 'the public /readyz')

    const detail = await gw.admin('GET', '/readyz')
    const lastError = (detail.json as { checks: { config: { last_reload_error: string | null } } }).checks.config.last_reload_error
    t.ok(lastError?.includes('${MUSIC_API_KEY}'), 'GET /admin/v1/readyz has the refusal, naming the variable')
    noSecret(t, JSON.stringify(detail.json), 'the admin readiness report')
  })
}
