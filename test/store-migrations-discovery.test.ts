// A backend's migrations are the files of its folder: a new migration is a file and nothing
// else. What the discovery must refuse is what a hand-kept list used to catch by review: a file
// whose export is not its name, a gap or a repeated version, a file exporting two things.
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import t, { type Test } from 'tap'
import { migrationsIn } from '../plugins/foundation/store/migrate.js'
import { pgMigrations, sqliteMigrations } from '../plugins/foundation/store/index.js'
import { repoPath } from './helpers/paths.js'

/** A folder of migration files (ES modules), for one case. */
function folder (t: Test, files: Record<string, string>): URL {
  const dir = mkdtempSync(join(tmpdir(), 'gateway-migrations-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  writeFileSync(join(dir, 'package.json'), '{ "type": "module" }')
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text)
  return pathToFileURL(dir + '/')
}

const file = (version: number, name: string, exportName = 'm'): string =>
  `export const ${exportName} = { version: ${version}, name: '${name}', sql: 'SELECT ${version}' }\n`

t.test('every NNN-name file of the folder, in version order; other files are not migrations', async (t) => {
  const dir = folder(t, {
    '002-second.js': file(2, 'second'),
    '001-first.js': file(1, 'first'),
    '003-third-one.js': file(3, 'third-one'),
    '003-third-one.d.ts': 'export {}\n',
    '003-third-one.js.map': '{}',
    'index.js': 'export const list = []\n',
    'README.md': 'notes',
  })
  const found = await migrationsIn(dir)
  t.same(found.map((m) => `${m.version}-${m.name}`), ['1-first', '2-second', '3-third-one'])
})

t.test('a file whose migration is not its number and name is refused', async (t) => {
  await t.rejects(migrationsIn(folder(t, { '001-first.js': file(1, 'other') })), /001-first\.js exports 1-other/)
  await t.rejects(migrationsIn(folder(t, { '001-first.js': file(2, 'first') })), /001-first\.js exports 2-first/)
})

t.test('a gap or a repeat in the versions is refused', async (t) => {
  await t.rejects(migrationsIn(folder(t, { '001-a.js': file(1, 'a'), '003-c.js': file(3, 'c') })), /003-c\.js follows 1/)
  await t.rejects(migrationsIn(folder(t, { '001-a.js': file(1, 'a'), '001-b.js': file(1, 'b') })), /follows 1/)
})

t.test('a file exporting anything beside its migration is refused', async (t) => {
  const two = file(1, 'a') + 'export const helper = 1\n'
  await t.rejects(migrationsIn(folder(t, { '001-a.js': two })), /exactly one migration \(it exports 2\)/)
})

t.test('the shipped folders: every file is listed, the two backends in step', async (t) => {
  for (const [backend, list] of [['sqlite', sqliteMigrations], ['pg', pgMigrations]] as const) {
    const files = readdirSync(repoPath(`plugins/foundation/store/migrations/${backend}`)).filter((f) => /^\d{3}-.*\.ts$/.test(f)).sort()
    t.same(list.map((m) => `${String(m.version).padStart(3, '0')}-${m.name}.ts`), files, `${backend}: one migration per file, in order`)
  }
  t.same(pgMigrations.map((m) => m.name), sqliteMigrations.map((m) => m.name), 'the same migrations on both backends')
})
