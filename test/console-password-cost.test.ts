// The console's scrypt cost: the default is OWASP's 2^15/8/3, set in gateway.yaml and in the
// schema's defaults; a configured cost makes new hashes and a stored hash is checked with the
// parameters it carries (raising the cost leaves passwords valid); a cost that is not a power
// of two is a config problem at its line. The console tests hash at TEST_SCRYPT_COST: these
// are the tests of the cost itself.
import t from 'tap'
import { join } from 'node:path'
import { readFileSync } from 'node:fs'
import { checkConfig, loadConfig } from '../plugins/apps/gateway/config.js'
import { hashPassword, verifyPassword } from '../plugins/apps/console/index.js'
import { PasswordHasher } from '../plugins/apps/console/password-hasher.js'
import { ROOT } from './helpers/paths.js'
import { writeTestConfig } from './helpers/test-config.js'

/** gateway.yaml's console section in a test config, to edit. */
const consoleOf = (c: Record<string, unknown>): Record<string, unknown> => c['console'] as Record<string, unknown>

const OWASP = /^scrypt\$32768\$8\$3\$[A-Za-z0-9_-]{22}\$[A-Za-z0-9_-]{43}$/

t.test('the default cost: OWASP\'s 2^15/8/3, in gateway.yaml and when the keys are absent', async (t) => {
  const { config } = loadConfig(join(ROOT, 'gateway.yaml'), {})
  t.same([config.console.password_scrypt_n, config.console.password_scrypt_r, config.console.password_scrypt_p], [32768, 8, 3], 'gateway.yaml')
  const cfg = writeTestConfig((c) => {
    for (const key of ['password_scrypt_n', 'password_scrypt_r', 'password_scrypt_p']) delete consoleOf(c)[key]
  })
  t.teardown(cfg.remove)
  t.notMatch(readFileSync(cfg.file, 'utf8'), /password_scrypt/, 'the copy names no cost')
  const absent = loadConfig(cfg.file, {}).config.console
  t.same([absent.password_scrypt_n, absent.password_scrypt_r, absent.password_scrypt_p], [32768, 8, 3], 'the schema\'s defaults')
  const hash = await hashPassword('correct horse battery staple')
  t.match(hash, OWASP, 'hashPassword without a cost: scrypt$32768$8$3$salt$hash')
  t.ok(await verifyPassword('correct horse battery staple', hash), 'it verifies')
  t.notOk(await verifyPassword('correct horse battery stapler', hash), 'another password does not')
})

t.test('a configured cost makes new hashes; a stored hash is checked with its own parameters', async (t) => {
  const cheap = new PasswordHasher(1, 0, { n: 1024, r: 8, p: 1 })
  const old = await cheap.hash('pw one')
  t.match(old, /^scrypt\$1024\$8\$1\$/, 'made at the configured 1024/8/1')
  // The operator raises the cost: the next hasher makes stronger hashes and still checks the old one.
  const raised = new PasswordHasher(1, 0, { n: 32768, r: 8, p: 3 })
  t.ok(await raised.verify('pw one', old), 'a password hashed before the raise still verifies')
  t.notOk(await raised.verify('pw two', old), 'and a wrong one still does not')
  t.match(await raised.hash('pw one'), OWASP, 'a new hash takes the raised cost')
  t.notOk(await cheap.verify('pw one', old.replace('$1024$', '$2048$')), 'the parameters a hash carries are the ones it is checked with')
})

t.test('a cost that is not a power of two, or out of range, is a config problem at its line', async (t) => {
  for (const [key, value] of [
    ['password_scrypt_n', 30000],
    ['password_scrypt_n', 512],
    ['password_scrypt_r', 0],
    ['password_scrypt_p', 9]
  ] as const) {
    const cfg = writeTestConfig((c) => { consoleOf(c)[key] = value })
    t.teardown(cfg.remove)
    const text = readFileSync(cfg.file, 'utf8')
    const at = text.search(new RegExp(`^ {2}${key}: ${value}$`, 'm'))
    t.ok(at >= 0, `the copy has ${key}: ${value}`)
    const problems = checkConfig(cfg.file, {})
    t.equal(problems.length, 1, `${key}: ${value}: one problem`)
    t.equal(problems[0]?.path, `console.${key}`, `${key}: ${value}: at console.${key}`)
    t.equal(problems[0]?.line, text.slice(0, at).split('\n').length, `${key}: ${value}: on its line`)
  }
})
