// Every start-up failure of `model-gateway serve` is one clear line on stderr and a non-zero
// exit, without a stack trace or a credential: the real CLI (dist/, built by `npm test`)
// spawned with a bad environment.
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test as Tap } from 'tap'
import { BOOT_NOTE_PREFIX, STARTUP_FAILURE_PREFIX } from '../../plugins/apps/server/serve-command.js'
import { builtCli } from '../helpers/built-cli.js'
import { ROOT } from '../helpers/paths.js'

const CLI = builtCli()
const CONFIG = join(ROOT, 'gateway.yaml')
const SECRET = 'startup-test-secret-0123456789abcdefghij'

interface Run { code: number | null, stderr: string, stdout: string }

/** Runs `serve` with only the given environment (plus PATH); kills it after 20 s (a start that hung). */
async function serve (env: Record<string, string>, args: string[] = [CONFIG]): Promise<Run> {
  return await new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI, 'serve', ...args], {
      env: { PATH: process.env.PATH ?? '', LOG_LEVEL: 'warn', PORT: '0', GATEWAY_ADMIN_PORT: '0', ...env },
      stdio: ['ignore', 'pipe', 'pipe']
    })
    let stderr = ''
    let stdout = ''
    child.stderr.on('data', (c: Buffer) => { stderr += c.toString() })
    child.stdout.on('data', (c: Buffer) => { stdout += c.toString() })
    const timer = setTimeout(() => child.kill('SIGKILL'), 20_000)
    child.on('exit', (code) => { clearTimeout(timer); resolve({ code, stderr, stdout }) })
  })
}

async function busyPort (): Promise<{ server: Server, port: number }> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const address = server.address()
  if (address === null || typeof address === 'string') throw new Error('no port')
  return { server, port: address.port }
}

function oneLine (t: Tap, run: Run, pattern: RegExp, secrets: string[] = []): void {
  t.equal(run.code, 1, `exit code 1 (${JSON.stringify(run.stderr)})`)
  const lines = run.stderr.split('\n').filter((l) => l.trim() !== '')
  t.equal(lines.length, 1, 'exactly one line on stderr')
  t.ok(lines[0]?.startsWith(STARTUP_FAILURE_PREFIX), 'the line says the gateway cannot start')
  t.match(lines[0] ?? '', pattern, 'the line names what failed')
  t.notMatch(run.stderr, /^\s+at /m, 'no stack trace')
  for (const s of secrets) t.notOk(run.stderr.includes(s) || run.stdout.includes(s), 'no credential in the output')
}

const dataDir = mkdtempSync(join(tmpdir(), 'gw-startup-'))
t.teardown(() => rmSync(dataDir, { recursive: true, force: true }))

t.test('missing GATEWAY_SECRET with DATABASE_URL', async (t) => {
  oneLine(t, await serve({ DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/test', GATEWAY_DATA_DIR: dataDir }), /GATEWAY_SECRET is required when DATABASE_URL is set/)
})

t.test('a GATEWAY_SECRET too short', async (t) => {
  oneLine(t, await serve({ GATEWAY_SECRET: 'short', GATEWAY_DATA_DIR: dataDir }), /GATEWAY_SECRET must be at least 32 characters/)
})

t.test('PostgreSQL unreachable: where (no password) and why', async (t) => {
  const { server, port } = await busyPort()
  await new Promise<void>((resolve) => server.close(() => resolve()))
  const run = await serve({ DATABASE_URL: `postgres://postgres:hunter2pw@127.0.0.1:${port}/test`, GATEWAY_SECRET: SECRET })
  oneLine(t, run, new RegExp(`PostgreSQL at 127\\.0\\.0\\.1:${port}/test \\(DATABASE_URL\\) cannot be opened: .*ECONNREFUSED`), ['hunter2pw'])
})

t.test('Redis unreachable: where (no password) and why', async (t) => {
  const { server, port } = await busyPort()
  await new Promise<void>((resolve) => server.close(() => resolve()))
  const run = await serve({ REDIS_URL: `redis://:hunter2pw@127.0.0.1:${port}`, GATEWAY_DATA_DIR: dataDir })
  oneLine(t, run, new RegExp(`Redis at 127\\.0\\.0\\.1:${port} \\(REDIS_URL\\) is unreachable: connect ECONNREFUSED`), ['hunter2pw'])
})

t.test('the embedded data directory cannot be created', async (t) => {
  const file = join(dataDir, 'a-file')
  writeFileSync(file, 'not a directory')
  oneLine(t, await serve({ GATEWAY_DATA_DIR: join(file, 'data'), GATEWAY_SECRET: SECRET }), /the embedded database in .* \(GATEWAY_DATA_DIR\) cannot be opened: ENOTDIR/)
})

t.test('the public port is in use', async (t) => {
  const { server, port } = await busyPort()
  t.teardown(() => { server.close() })
  oneLine(t, await serve({ PORT: String(port), HOST: '127.0.0.1', GATEWAY_DATA_DIR: dataDir }), new RegExp(`the gateway cannot listen on 127\\.0\\.0\\.1:${port}: the port is in use \\(EADDRINUSE\\)`))
})

t.test('the admin port is in use', async (t) => {
  const { server, port } = await busyPort()
  t.teardown(() => { server.close() })
  const token = 'admin-token-0123456789-0123456789-abcdef'
  const run = await serve({ GATEWAY_ADMIN_TOKEN: token, GATEWAY_ADMIN_PORT: String(port), HOST: '127.0.0.1', GATEWAY_DATA_DIR: dataDir })
  oneLine(t, run, new RegExp(`the admin API cannot listen on 127\\.0\\.0\\.1:${port}: the port is in use \\(EADDRINUSE\\)`), [token])
})

t.test('a weak admin token (never echoed)', async (t) => {
  oneLine(t, await serve({ GATEWAY_ADMIN_TOKEN: 'weak-token-zz', GATEWAY_DATA_DIR: dataDir }), /GATEWAY_ADMIN_TOKEN must be at least 32 characters/, ['weak-token-zz'])
})

t.test('a bad config: the check report, then one summary line', async (t) => {
  const bad = join(dataDir, 'bad.yaml')
  writeFileSync(bad, 'server:\n  port: "not a number"\n')
  const run = await serve({ GATEWAY_DATA_DIR: dataDir }, [bad])
  t.equal(run.code, 1, 'exit code 1')
  const lines = run.stderr.split('\n').filter((l) => l.trim() !== '')
  t.ok(lines.length >= 2, 'the problems are listed')
  t.match(lines.at(-1) ?? '', new RegExp(`^${STARTUP_FAILURE_PREFIX}.*bad\\.yaml: \\d+ problem\\(s\\); the gateway does not start on a bad config$`))
  t.notMatch(run.stderr, /^\s+at /m, 'no stack trace')
  const missing = await serve({ GATEWAY_DATA_DIR: dataDir }, [join(dataDir, 'nowhere.yaml')])
  t.equal(missing.code, 1)
  t.match(missing.stderr, /cannot read .*nowhere\.yaml \(ENOENT\)/)
})

t.test('a good start says what is off, one line each', async (t) => {
  // Started, then stopped by SIGTERM once it is ready: the control case of the ones above.
  const child = spawn(process.execPath, [CLI, 'serve', CONFIG], {
    // Port 0 for both listeners (the admin one serves the metrics even with the API off): the
    // README's test, which may run beside this one, starts a gateway on the default 8081.
    env: { PATH: process.env.PATH ?? '', PORT: '0', GATEWAY_ADMIN_PORT: '0', HOST: '127.0.0.1', GATEWAY_DATA_DIR: dataDir, OPENAI_API_KEY: 'sk-test-not-empty' },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  let out = ''
  let err = ''
  // Listened for from the start: a child that exits before it is ready is reported, not waited for.
  const exited = new Promise<number | null>((resolve) => { child.on('exit', resolve) })
  child.stderr.on('data', (c: Buffer) => { err += c.toString() })
  let waited: ReturnType<typeof setTimeout> | undefined
  const ready = await Promise.race([
    new Promise<boolean>((resolve) => {
      child.stdout.on('data', (c: Buffer) => {
        out += c.toString()
        if (out.includes('model gateway ready')) resolve(true)
      })
    }),
    exited.then(() => false),
    // A machine busy with the rest of the suite can take a while to boot it.
    new Promise<boolean>((resolve) => { waited = setTimeout(() => resolve(false), 60_000) })
  ])
  clearTimeout(waited)
  t.ok(ready, `ready before it exited or 60 s passed (stderr: ${err.trim().slice(0, 300)})`)
  child.kill('SIGTERM')
  const code = await exited
  t.equal(code, 0, 'a clean stop exits 0')
  // The notes are plain lines on stderr, apart from the JSON log on stdout.
  const notes = err.split('\n').filter((l) => l !== '')
  t.ok(notes.every((l) => l.startsWith(BOOT_NOTE_PREFIX)), 'stderr holds boot notes only, each a plain line')
  const messages = notes.map((l) => l.slice(BOOT_NOTE_PREFIX.length))
  t.equal(messages.filter((m) => m.startsWith('admin API is off')).length, 1, 'the admin API is off: one line')
  t.ok(messages.some((m) => m.startsWith('provider anthropic has no credential: header x-api-key is empty')), 'anthropic has no credential')
  t.ok(messages.some((m) => m.startsWith('provider genai has no credential')), 'genai has no credential')
  t.notOk(messages.some((m) => m.startsWith('provider openai has no credential')), 'openai has one')
  t.ok(messages.some((m) => m.startsWith('GATEWAY_SECRET is not set')), 'the generated secret is said once')
  t.notOk(out.split('\n').some((l) => /has no credential|admin API is off|GATEWAY_SECRET/.test(l)), 'and not repeated as JSON log lines')
  t.notOk((out + err).includes('sk-test-not-empty'), 'the credential is not logged')
  // The first estimate (a cut stream) must not load a tokenizer on the event loop under traffic.
  const messagesOut = out.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as { msg?: string, tokenizers?: string[] })
  const loaded = messagesOut.findIndex((l) => l.msg === 'tokenizers loaded')
  const listening = messagesOut.findIndex((l) => l.msg?.startsWith('Server listening') === true)
  t.same(messagesOut[loaded]?.tokenizers, ['o200k_base'], 'the OpenAI models\' tokenizer is loaded at boot (gateway.yaml: gpt-4o family)')
  t.ok(loaded !== -1 && listening !== -1 && loaded < listening, `loaded before the listener opens (lines ${loaded}, ${listening})`)
})
