// Golden warnings: valid/<name>.yaml loads (exit 0) and prints exactly valid/<name>.warnings.txt
// on stderr, or nothing when there is no such file. A warning names a model that leaves out the
// facts the hold and the door checks read (plugins/concerns/models/facts-check.ts).
import t from 'tap'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { checkCommand, type CommandIo } from '../plugins/apps/gateway/check-command.js'
import { loadConfig } from '../plugins/apps/gateway/config.js'
import { repoPath } from './helpers/paths.js'

const validDir = repoPath('test', 'fixtures', 'config', 'valid')

async function runCheck (file: string): Promise<{ code: number, stdout: string, stderr: string }> {
  let stdout = ''
  let stderr = ''
  const io: CommandIo = { env: {}, stdout: { write: (text: string) => { stdout += text } }, stderr: { write: (text: string) => { stderr += text } } }
  return { code: await checkCommand([file], io), stdout, stderr }
}

t.test('valid fixtures exit 0 and print exactly their warnings', async (t) => {
  const cwd = process.cwd()
  process.chdir(validDir)
  t.teardown(() => { process.chdir(cwd) })
  const files = readdirSync(validDir).filter((f) => f.endsWith('.yaml')).sort()
  t.ok(files.includes('missing-facts.yaml'), 'the missing-facts fixture exists')
  for (const file of files) {
    const golden = file.replace(/\.yaml$/, '.warnings.txt')
    const expected = existsSync(golden) ? readFileSync(golden, 'utf8') : ''
    const { code, stdout, stderr } = await runCheck(file)
    t.equal(code, 0, `${file}: warnings do not fail the check`)
    t.match(stdout, new RegExp(`^${file.replace('.', '\\.')}: ok \\(`), `${file}: the ok line`)
    t.equal(stderr, expected, `${file} prints ${existsSync(golden) ? golden : 'no warning'}`)
    if (expected !== '') {
      const n = expected.trimEnd().split('\n').length - 1
      t.equal(expected.trimEnd().split('\n').at(-1), `${n} ${n === 1 ? 'warning' : 'warnings'}`, `${golden}: the count line agrees`)
      t.equal(loadConfig(file, {}).warnings?.length, n, `${file}: loadConfig returns the same ${n}`)
    }
  }
})

t.test('the repository gateway.yaml declares every model\'s facts: no warning', async (t) => {
  const loaded = loadConfig(join(validDir, '..', '..', '..', '..', 'gateway.yaml'), {})
  t.same(loaded.warnings, [])
})
