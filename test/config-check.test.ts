// Golden config files: valid/*.yaml check clean; invalid/<name>.yaml prints exactly
// invalid/<name>.expected.txt. Paths in the output are relative to the fixture directory.
import t from 'tap'
import { spawnSync } from 'node:child_process'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { formatProblem } from '../plugins/foundation/config/index.js'
import { checkCommand, type CommandIo } from '../plugins/apps/gateway/check-command.js'
import { checkConfig } from '../plugins/apps/gateway/config.js'
import { builtCli } from './helpers/built-cli.js'
import { ROOT } from './helpers/paths.js'

const root = ROOT
const fixtures = join(root, 'test', 'fixtures', 'config')
const validDir = join(fixtures, 'valid')
const invalidDir = join(fixtures, 'invalid')
const cli = builtCli()

/** Runs `check` in-process with an empty environment and captures what it prints. */
async function runCheck (file: string): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = ''
  let stderr = ''
  const io: CommandIo = {
    env: {},
    stdout: { write: (text: string) => { stdout += text } },
    stderr: { write: (text: string) => { stderr += text } }
  }
  const code = await checkCommand([file], io)
  return { code, stdout, stderr }
}

const yamlFiles = (dir: string): string[] => readdirSync(dir).filter((f) => f.endsWith('.yaml')).sort()

t.test('valid fixtures check clean', async (t) => {
  const files = yamlFiles(validDir)
  t.ok(files.length >= 2, 'at least two valid fixtures')
  for (const file of files) {
    const problems = checkConfig(join(validDir, file), {})
    t.same(problems.map(formatProblem), [], file)
  }
})

t.test('invalid fixtures print exactly their expected lines', async (t) => {
  const required = [
    'unknown-key', 'wrong-type', 'bad-model-id', 'bad-reference', 'duplicate-error-code',
    'missing-provider', 'missing-fallback', 'fallback-cycle', 'unknown-family', 'yaml-syntax',
    'missing-env', 'duplicate-route', 'unmetered-operation', 'bad-prices'
  ]
  for (const name of required) t.ok(existsSync(join(invalidDir, `${name}.yaml`)), `fixture ${name}.yaml exists`)

  const cwd = process.cwd()
  process.chdir(invalidDir)
  t.teardown(() => { process.chdir(cwd) })
  for (const file of yamlFiles(invalidDir)) {
    const expectedFile = file.replace(/\.yaml$/, '.expected.txt')
    t.ok(existsSync(expectedFile), `${expectedFile} exists`)
    const expected = readFileSync(expectedFile, 'utf8')
    const { code, stdout, stderr } = await runCheck(file)
    t.equal(code, 1, `${file} exits 1`)
    t.equal(stdout, '', `${file} prints nothing on stdout`)
    t.equal(stderr, expected, `${file} prints ${expectedFile}`)
  }
})

t.test('the problem count line agrees with the problems', async (t) => {
  const cwd = process.cwd()
  process.chdir(invalidDir)
  t.teardown(() => { process.chdir(cwd) })
  for (const file of yamlFiles(invalidDir)) {
    const lines = readFileSync(file.replace(/\.yaml$/, '.expected.txt'), 'utf8').trimEnd().split('\n')
    const n = lines.length - 1
    t.equal(lines.at(-1), `${n} ${n === 1 ? 'problem' : 'problems'}`, file)
    t.equal(checkConfig(file, {}).length, n, `${file}: checkConfig returns the same ${n}`)
  }
})

t.test('the real CLI', async (t) => {
  const run = (cwd: string, ...args: string[]): ReturnType<typeof spawnSync> & { stdout: string; stderr: string } =>
    spawnSync(process.execPath, [cli, ...args], {
      cwd,
      env: { PATH: process.env.PATH ?? '' },
      encoding: 'utf8'
    })

  t.test('check on a valid file exits 0', async (t) => {
    const res = run(validDir, 'check', 'minimal.yaml')
    t.equal(res.status, 0)
    t.equal(res.stdout, 'minimal.yaml: ok (1 routes, 1 models, 1 error codes)\n')
    t.equal(res.stderr, '')
  })

  t.test('check on an invalid file exits 1 and prints every problem', async (t) => {
    const res = run(invalidDir, 'check', 'unknown-key.yaml')
    t.equal(res.status, 1)
    t.equal(res.stdout, '')
    t.equal(res.stderr, readFileSync(join(invalidDir, 'unknown-key.expected.txt'), 'utf8'))
  })

  t.test('check without a file uses $GATEWAY_CONFIG', async (t) => {
    const res = spawnSync(process.execPath, [cli, 'check'], {
      cwd: validDir,
      env: { PATH: process.env.PATH ?? '', GATEWAY_CONFIG: 'with-includes.yaml' },
      encoding: 'utf8'
    })
    t.equal(res.status, 0)
    t.equal(res.stdout, 'with-includes.yaml: ok (2 routes, 3 models, 2 error codes)\n')
  })

  t.test('an unknown subcommand prints usage and exits 2', async (t) => {
    const res = run(validDir, 'frobnicate')
    t.equal(res.status, 2)
    t.match(res.stderr, /unknown command "frobnicate"/)
    t.match(res.stderr, /usage: model-gateway/)
  })

  t.test('help exits 0', async (t) => {
    const res = run(validDir, 'help')
    t.equal(res.status, 0)
    t.match(res.stdout, /check \[file\]/)
  })
})
