// The README's first screen, run as a newcomer runs it: a fresh `git clone` of this checkout
// into a temporary directory, the install, `npm run demo` until it prints its key, each SDK
// snippet exactly as the README shows it (read from README.md now, saved as hi.mjs and run
// with `node hi.mjs`), the charge the demo points at, then `npm start` in front of mock
// providers (reached through the `*_BASE_URL` variables gateway.yaml reads) and the README's
// CLI path to a key, a billed call and its row in the request log.
//
// It fails on a command of the first screen it does not know how to run (the README would
// show a step this test skips), on any stack trace, and on any warning the README does not
// name as expected (the boot notes, `model-gateway: note: …`).
//
// Cost: the install is `npm ci --prefer-offline --no-audit --no-fund` on the npm cache CI has
// just filled, plus `prepare`'s one build of dist/. better-sqlite3 is not compiled a second
// time: its install script (prebuild-install) is handed the binary this checkout's own install
// built, as the prebuilt binary it would otherwise download or compile; everything else the
// install does runs as a person's would. docs/testing.md has the measured figures.
import t from 'tap'
import { ROOT } from './helpers/paths.js'
import { execFileSync, spawn, type ChildProcess } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startMockUpstream } from './fixtures/mock-upstream.js'

t.setTimeout(900_000)

const root = ROOT
const README = readFileSync(join(root, 'README.md'), 'utf8')
const NPM = process.platform === 'win32' ? 'npm.cmd' : 'npm'

/** The first screen: the section a newcomer follows, up to the next heading of its level. */
function firstScreen (text: string): string {
  const start = text.indexOf('## From clone to a billed answer')
  if (start < 0) throw new Error('README.md has no "From clone to a billed answer" section')
  const end = text.indexOf('\n## ', start + 3)
  return text.slice(start, end < 0 ? undefined : end)
}

interface Block { lang: string, body: string }
const screen = firstScreen(README)
const blocks: Block[] = [...screen.matchAll(/```(\w*)\n([\s\S]*?)```/g)].map((m) => ({ lang: m[1] ?? '', body: m[2] ?? '' }))
const shell = blocks.filter((b) => b.lang === 'sh')
const snippets = blocks.filter((b) => b.lang === 'js').map((b) => b.body)
/** A shell block's commands, without their comments. */
const commands = (b: Block | undefined): string[] => (b?.body ?? '').split('\n').map((l) => l.replace(/\s+#.*$/, '').trim()).filter((l) => l !== '')
  .flatMap((l) => l.split(/\s*&&\s*/))

/** Every line of what a newcomer saw, checked at the end. */
const transcript: Array<{ step: string, text: string }> = []
const STACK = /^\s+at .+(:\d+:\d+\)?|\(native\)|\(<anonymous>\))$/m
/**
 * Warnings the README names as expected: the gateway's boot notes. And npm's word about the
 * one variable this test adds to the install (the prebuilt binary's place), not a person's.
 */
const DOCUMENTED = [/^model-gateway: note: /, /^npm warn Unknown env config "better-sqlite3-local-prebuilds"/]

function isWarning (line: string): boolean {
  if (/^\{.*"level":\s*(40|50|60)/.test(line)) return true // a pino warn/error/fatal line
  return /\bwarn(ing)?\b|deprecat/i.test(line)
}

interface Run { code: number | null, stdout: string, stderr: string }

/** Runs a command to its end; both streams go to the transcript. */
function runBoth (step: string, cwd: string, file: string, args: string[], env: NodeJS.ProcessEnv): Promise<Run> {
  return new Promise((resolve) => {
    const child = spawn(file, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (c: Buffer) => { stdout += c.toString() })
    child.stderr.on('data', (c: Buffer) => { stderr += c.toString() })
    child.on('close', (code) => {
      transcript.push({ step, text: stdout + stderr })
      resolve({ code, stdout, stderr })
    })
  })
}

interface Server { child: ChildProcess, output: () => string, exited: Promise<{ code: number | null, signal: string | null }> }

/** Starts a long-running command and waits until its output matches `ready` (or it exits). */
async function startServer (step: string, cwd: string, args: string[], env: NodeJS.ProcessEnv, ready: RegExp): Promise<Server> {
  const child = spawn(NPM, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true })
  let out = ''
  const exited = new Promise<{ code: number | null, signal: string | null }>((resolve) => { child.on('exit', (code, signal) => { transcript.push({ step, text: out }); resolve({ code, signal }) }) })
  await new Promise<void>((resolve) => {
    const seen = (c: Buffer): void => {
      out += c.toString()
      if (ready.test(out)) resolve()
    }
    child.stdout?.on('data', seen)
    child.stderr?.on('data', seen)
    exited.then(() => resolve(), () => resolve())
  })
  return { child, output: () => out, exited }
}

/**
 * Ctrl-C, as a person stops it: SIGINT to npm's process group. True when it ended as Ctrl-C
 * ends a command: npm exits 0 or by the signal itself (it re-raises it), never with an error code.
 */
async function stop (server: Server): Promise<boolean> {
  if (server.child.exitCode === null && server.child.pid !== undefined) process.kill(-server.child.pid, 'SIGINT')
  const { code, signal } = await server.exited
  return code === 0 || signal === 'SIGINT'
}

t.test('the README first screen works from a fresh clone', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'gw-readme-'))
  const clone = join(dir, 'model-gateway')
  const servers: Server[] = []
  t.teardown(async () => {
    for (const s of servers) if (s.child.exitCode === null && s.child.pid !== undefined) { try { process.kill(-s.child.pid, 'SIGKILL') } catch {} }
    rmSync(dir, { recursive: true, force: true })
  })
  execFileSync('git', ['clone', '--quiet', root, clone], { stdio: 'ignore' })
  // A newcomer's shell: none of this checkout's or CI's gateway variables.
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, npm_config_cache: process.env.npm_config_cache, NO_COLOR: '1', npm_config_update_notifier: 'false' }
  for (const [k, v] of Object.entries(env)) if (v === undefined) delete env[k]
  // better-sqlite3's binary, as prebuild-install names a prebuilt one, from this checkout.
  const sqlite = join(root, 'node_modules', 'better-sqlite3')
  const prebuilds = join(dir, 'prebuilds')
  mkdirSync(prebuilds)
  const { version } = JSON.parse(readFileSync(join(sqlite, 'package.json'), 'utf8')) as { version: string }
  execFileSync('tar', ['-czf', join(prebuilds, `better-sqlite3-v${version}-node-v${process.versions.modules}-${process.platform}-${process.arch}.tar.gz`), '-C', sqlite, 'build/Release/better_sqlite3.node'])
  const installEnv = { ...env, npm_config_better_sqlite3_local_prebuilds: prebuilds }

  // 1. The install and the demo.
  const first = commands(shell[0])
  // The first screen's block: the install and the demo, then `npm test` (the suite this test
  // runs in: running it again from here would recurse).
  t.same(first, ['npm ci', 'npm run demo', 'npm test'], 'the first screen starts with the install and the demo, then npm test')
  for (const line of first) {
    if (line === 'npm ci') {
      const started = performance.now()
      const install = await runBoth('npm ci', clone, NPM, ['ci', '--prefer-offline', '--no-audit', '--no-fund'], installEnv)
      t.comment(`npm ci --prefer-offline (prepare builds dist/): ${((performance.now() - started) / 1000).toFixed(1)} s`)
      t.equal(install.code, 0, 'npm ci succeeds')
    } else if (line !== 'npm run demo' && line !== 'npm test') {
      t.fail(`the README shows a step this test does not run: ${line}`)
    }
  }
  const demo = await startServer('npm run demo', clone, ['run', 'demo'], env, /Ctrl-C stops it|npm run demo: /)
  servers.push(demo)
  const key = /^\s*export GATEWAY_KEY=(\S+)$/m.exec(demo.output())?.[1]
  t.ok(key, 'the demo prints its key as an export line')
  if (key === undefined) { t.comment(demo.output()); return }

  // 2. Each SDK snippet as the README shows it, saved as hi.mjs, run with `node hi.mjs`.
  t.equal(snippets.length, 3, 'three SDK snippets: OpenAI, Anthropic, GenAI')
  for (const [i, snippet] of snippets.entries()) {
    writeFileSync(join(clone, 'hi.mjs'), snippet)
    const call = await runBoth(`node hi.mjs (snippet ${i + 1})`, clone, process.execPath, ['hi.mjs'], { ...env, GATEWAY_KEY: key })
    t.equal(call.code, 0, `snippet ${i + 1} runs`)
    t.match(call.stdout.trim(), /\S/, `snippet ${i + 1} prints the answer`)
    t.notMatch(call.stdout, /^undefined$/m, `snippet ${i + 1} prints text, not undefined`)
  }

  // 3. The charge, where the demo points: its admin and CLI lines (the CLI is a separate process).
  const admin = /curl -s "(http:\/\/127\.0\.0\.1:8081\/admin\/v1\/requests\?account_id=\S+)" -H "Authorization: Bearer (\S+)"/.exec(demo.output())
  t.ok(admin, 'the demo prints the request log call on 127.0.0.1:8081, where npm start has the admin API')
  if (admin !== null) {
    const res = await fetch(admin[1] ?? '', { headers: { authorization: `Bearer ${admin[2] ?? ''}` } })
    const log = await res.json() as { data: Array<{ cost: string | null, billing_status: string }> }
    t.equal(log.data.length, 3, 'right after the calls, the request log shows all three')
    t.ok(log.data.every((r) => r.billing_status === 'BILLED' && Number(r.cost) > 0), 'each billed')
  }
  const cliLine = /^\s*GATEWAY_DATA_DIR=(\S+) node (dist\/bin\/model-gateway\.js requests list .+)$/m.exec(demo.output())
  t.ok(cliLine, 'the demo prints the CLI path to the request log')
  if (cliLine !== null) {
    const listed = await runBoth('demo: requests list', clone, process.execPath, (cliLine[2] ?? '').split(' '), { ...env, GATEWAY_DATA_DIR: cliLine[1] })
    t.equal(listed.code, 0, 'the CLI lists it')
    t.equal((JSON.parse(listed.stdout) as { data: unknown[] }).data.length, 3, 'the same three requests')
  }
  t.ok(await stop(demo), 'Ctrl-C stops the demo')

  // 4. npm start in front of mock providers, the CLI path to a key, a billed call, its row.
  t.match(screen, /then `npm start`/, 'the README says to run npm start after the demo')
  const mock = await startMockUpstream({ record: false })
  t.teardown(() => mock.close())
  const providers = { OPENAI_BASE_URL: mock.url, ANTHROPIC_BASE_URL: mock.url, GENAI_BASE_URL: mock.url, MUSIC_BASE_URL: mock.url, OPENAI_API_KEY: 'sk-upstream-openai', ANTHROPIC_API_KEY: 'sk-upstream-anthropic', GENAI_API_KEY: 'upstream-genai', MUSIC_API_KEY: 'upstream-music' }
  for (const name of Object.keys(providers)) {
    if (!name.endsWith('_BASE_URL')) t.match(screen, name, `the README names ${name}`)
  }
  const startedAt = performance.now()
  const server = await startServer('npm start', clone, ['start'], { ...env, ...providers }, /model gateway ready|cannot start/)
  servers.push(server)
  t.comment(`npm start to ready: ${((performance.now() - startedAt) / 1000).toFixed(1)} s`)
  t.match(server.output(), /model gateway ready/, 'npm start serves')
  t.notMatch(server.output(), /building dist\//, 'npm start after npm ci does not build again')

  let account = ''
  let gatewayKey = ''
  for (const line of commands(shell[1])) {
    const words = line.replaceAll('acct_…', account).split(/\s+/)
    if (words[0] !== 'node' || words[1] !== 'dist/bin/model-gateway.js') { t.fail(`the README shows a step this test does not run: ${line}`); continue }
    if (words[2] === 'requests') {
      // "then call as above with export GATEWAY_KEY= the new key": the OpenAI snippet.
      writeFileSync(join(clone, 'hi.mjs'), snippets[0] ?? '')
      const call = await runBoth('npm start: node hi.mjs', clone, process.execPath, ['hi.mjs'], { ...env, GATEWAY_KEY: gatewayKey })
      t.equal(call.code, 0, 'the new key is served')
    }
    const ran = await runBoth(line, clone, process.execPath, words.slice(1), env)
    t.equal(ran.code, 0, `${words.slice(2, 4).join(' ')} succeeds`)
    const out = JSON.parse(ran.stdout) as { id?: string, key?: string, available?: string, data?: Array<{ cost: string | null, billing_status: string }> }
    if (words[2] === 'accounts') account = out.id ?? ''
    if (words[2] === 'keys') gatewayKey = out.key ?? ''
    if (words[2] === 'requests') {
      t.equal(out.data?.length, 1, 'the request log shows the call')
      t.ok(out.data?.every((r) => r.billing_status === 'BILLED' && Number(r.cost) > 0), 'billed')
    }
  }
  t.match(account, /^acct_/, 'the README path gave an account')
  t.match(gatewayKey, /^sk-/, 'and a key')
  t.ok(await stop(server), 'Ctrl-C stops npm start')

  // 5. What the newcomer saw: no stack trace, no warning the README does not name.
  for (const { step, text } of transcript) {
    t.notMatch(text, STACK, `${step}: no stack trace`)
    const warnings = text.split('\n').filter((l) => isWarning(l) && !DOCUMENTED.some((d) => d.test(l)))
    t.same(warnings, [], `${step}: no warning the README does not name`)
  }
})
