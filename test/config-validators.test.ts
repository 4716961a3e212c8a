// The config validators the build compiles ahead of time (bin/schema-validators.mjs, loaded by
// plugins/foundation/config/validate.ts) are ajv's own validators of schemas/, made once: on
// every golden config, valid and invalid, and on the built-in operations they return the same
// errors and fill in the same defaults as the validators a process compiles itself. A module
// made from other schema files, or none at all, is not used.
import t from 'tap'
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { ValidateFunction } from 'ajv'
import { parse } from 'yaml'
import { loadValidators, PRECOMPILED_FILE, schemasDigest, schemasDir } from '../plugins/foundation/config/validate.js'
import { readSources } from '../plugins/foundation/config/sources.js'
import { repoPath } from './helpers/paths.js'

const precompiled = loadValidators()
const compiled = loadValidators(schemasDir(), join(tmpdir(), 'no-such-dir', 'schema-validators.cjs'))

t.test('the test build has the precompiled module, made from these schemas, and uses it', async (t) => {
  t.equal(precompiled.source, 'precompiled', `loaded from ${PRECOMPILED_FILE}`)
  t.equal(compiled.source, 'compiled', 'without the module the schemas are compiled')
  t.not(precompiled.root, compiled.root, 'two different functions are compared below')
  // dist/'s copy, which the CLI and `npm start` load: written by the build `npm test` runs first.
  const built = createRequire(import.meta.url)(repoPath('dist', 'plugins', 'foundation', 'config', 'schema-validators.cjs')) as { digest: string }
  t.equal(built.digest, schemasDigest(), 'npm run build wrote dist/\'s module from these schemas')
})

/** What a validator says of a copy of `data`: its errors (the parts the check report reads) and the data after defaults. */
function verdict (validate: ValidateFunction<unknown>, data: unknown): { ok: boolean, errors: unknown[], data: unknown } {
  const copy = structuredClone(data)
  const ok = validate(copy)
  const errors = (validate.errors ?? []).map((e) => ({
    instancePath: e.instancePath,
    schemaPath: e.schemaPath,
    keyword: e.keyword,
    params: e.params,
    message: e.message,
    parentSchema: e.parentSchema,
    data: e.data
  }))
  return { ok, errors: ok ? [] : errors, data: copy }
}

t.test('the same errors and defaults as compiled validators, on every golden config', async (t) => {
  const files = ['valid', 'invalid'].flatMap((kind) => {
    const dir = repoPath('test', 'fixtures', 'config', kind)
    return readdirSync(dir).filter((f) => f.endsWith('.yaml')).map((f) => join(dir, f))
  })
  files.push(repoPath('gateway.yaml'))
  t.ok(files.length > 30, `${files.length} configs`)
  let failing = 0
  for (const file of files) {
    const sources = readSources(file, {})
    if (!sources.complete) continue
    const a = verdict(precompiled.root, sources.merged)
    const b = verdict(compiled.root, sources.merged)
    if (!b.ok) failing++
    t.same(a, b, `${file.slice(file.indexOf('test/') >= 0 ? file.indexOf('test/') : 0)}: ${b.errors.length} errors`)
  }
  t.ok(failing >= 5, `${failing} of them fail the schema, so errors are compared too`)
})

t.test('the same verdict on the built-in operations', async (t) => {
  const data = parse(readFileSync(repoPath('config', 'operations.yaml'), 'utf8')) as unknown
  const a = verdict(precompiled.operations, data)
  t.ok(a.ok, 'they are valid')
  t.same(a, verdict(compiled.operations, data), 'with the same defaults filled in')
  const broken = { ...(data as Record<string, unknown>), 'chat.completions': { meter: { kind: 'no-such-meter' } } }
  const c = verdict(precompiled.operations, broken)
  t.notOk(c.ok, 'a broken entry fails')
  t.same(c, verdict(compiled.operations, broken), 'with the same errors')
})

t.test('a module made from other schema files is not used', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'schemas-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  cpSync(schemasDir(), dir, { recursive: true })
  t.equal(schemasDigest(dir), schemasDigest(), 'a copy has the same digest')
  t.equal(loadValidators(dir).source, 'precompiled', 'and uses the module')
  const file = join(dir, 'wallet.schema.json')
  const schema = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>
  writeFileSync(file, JSON.stringify({ ...schema, description: `${String(schema['description'])} (edited)` }))
  t.not(schemasDigest(dir), schemasDigest(), 'an edited schema changes the digest')
  t.equal(loadValidators(dir).source, 'compiled', 'and its validators are compiled from the files')
})
