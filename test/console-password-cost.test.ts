// The console's scrypt cost: the default is OWASP's 2^15/8/3, set in gateway.yaml and in the
// schema's defaults; a configured cost makes new hashes and a stored hash is checked with the
// parameters it carries (raising the cost leaves passwords valid); a cost that is not a power
// of two is a config problem at its line. The console tests hash at TEST_SCRYPT_COST: these
// are the tests of the cost itself.
import t from 'tap'
import { join } from 'node:path'
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { checkConfig, loadConfig } from '../plugins/apps/gateway/config.js'
import { hashPassword, verifyPassword } from '../plugins/apps/console/index.js'
import { PasswordHasher } from '../plugins/apps/console/password-hasher.js'
import { ROOT } from './helpers/paths.js'

/** A scratch directory holding a copy of gateway.yaml's includes (config/), for an edited copy beside them. */
function scratch (t: { teardown: (fn: () => void) => unknown }): string {
  const dir = mkdtempSync(join(tmpdir(), 'gw-scrypt-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  cpSync(join(ROOT, 'config'), join(dir, 'config'), { recursive: true })
  return join(dir, 'gateway.yaml')
}

const OWASP = /^scrypt\$32768\$8\$3\$[A-Za-z0-9_-]{22}\$[A-Za-z0-9_-]{43}$/

t.test('the default cost: OWASP\'s 2^15/8/3, in gateway.yaml and when the keys are absent', async (t) => {
  const { config } = loadConfig(join(ROOT, 'gateway.yaml'), {})
  t.same([config.console.password_scrypt_n, config.console.password_scrypt_r, config.console.password_scrypt_p], [32768, 8, 3], 'gateway.yaml')
  const file = scratch(t)
  writeFileSync(file, readFileSync(join(ROOT, 'gateway.yaml'), 'utf8').replace(/^ {2}password_scrypt_[nrp]: .*\n/gm, ''))
  t.notMatch(readFileSync(file, 'utf8'), /password_scrypt/, 'the copy names no cost')
  const absent = loadConfig(file, {}).config.console
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
  const file = scratch(t)
  const text = readFileSync(join(ROOT, 'gateway.yaml'), 'utf8')
  for (const [from, to, path] of [
    ['password_scrypt_n: 32768', 'password_scrypt_n: 30000', 'console.password_scrypt_n'],
    ['password_scrypt_n: 32768', 'password_scrypt_n: 512', 'console.password_scrypt_n'],
    ['password_scrypt_r: 8', 'password_scrypt_r: 0', 'console.password_scrypt_r'],
    ['password_scrypt_p: 3', 'password_scrypt_p: 9', 'console.password_scrypt_p']
  ] as const) {
    t.ok(text.includes(from), `gateway.yaml has ${from}`)
    writeFileSync(file, text.replace(from, to))
    const problems = checkConfig(file, {})
    t.equal(problems.length, 1, `${to}: one problem`)
    t.equal(problems[0]?.path, path, `${to}: at ${path}`)
    t.equal(problems[0]?.line, text.slice(0, text.indexOf(from)).split('\n').length, `${to}: on its line`)
  }
})
