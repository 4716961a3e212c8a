// The production tree stands alone: nothing under plugins/ (or a built bin script) reaches into
// test/, so the build and the mounted package never carry test helpers (they live in test/helpers/).
// And neighbours that meet through an interface do not import each other (upstream and jobs); the
// folders that still import each other are listed, and the list may only shrink.
import { readFileSync } from 'node:fs'
import { join, relative, resolve } from 'node:path'
import t from 'tap'
import { ROOT, tsSources } from './helpers/paths.js'

const root = ROOT
const plugins = join(root, 'plugins')
const tests = join(root, 'test')

/** The relative specifiers a module imports or re-exports, static or dynamic. */
function specifiers (text: string): string[] {
  const out: string[] = []
  for (const m of text.matchAll(/(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)['"](\.{1,2}\/[^'"]+)['"]/g)) if (m[1] !== undefined) out.push(m[1])
  return out
}

t.test('the import scan sees static, side-effect and dynamic imports', async (t) => {
  t.strictSame(specifiers("import { a } from '../x.js'\nimport '../y.js'\nconst z = await import('../z.js')\nexport * from './w.js'"), ['../x.js', '../y.js', '../z.js', './w.js'])
})

t.test('no module under plugins/ imports from test/', async (t) => {
  const files = tsSources(plugins)
  t.ok(files.length > 50, `scanned the production tree (${files.length} files)`)
  for (const file of files) {
    const inTest = specifiers(readFileSync(file, 'utf8')).filter((s) => resolve(file, '..', s).startsWith(tests))
    t.strictSame(inTest, [], `${relative(root, file)} imports nothing from test/`)
  }
})

t.test('the build compiles nothing from test/: its bin scripts import none, the demo is left out', async (t) => {
  const build = JSON.parse(readFileSync(join(root, 'tsconfig.build.json'), 'utf8')) as { exclude?: string[] }
  const excluded = new Set(build.exclude ?? [])
  t.ok(excluded.has('bin/demo.ts'), 'the demo (mock providers from test/fixtures) is not built')
  const built = tsSources(join(root, 'bin')).filter((f) => !excluded.has(relative(root, f)))
  t.ok(built.length > 0, 'some bin scripts are built')
  for (const file of built) {
    const inTest = specifiers(readFileSync(file, 'utf8')).filter((s) => resolve(file, '..', s).startsWith(tests))
    t.strictSame(inTest, [], `${relative(root, file)} imports nothing from test/`)
  }
})

t.test('the store test helpers live in test/helpers/, not in the production tree', async (t) => {
  t.strictSame(tsSources(plugins).filter((f) => /testing/.test(relative(plugins, f))).map((f) => relative(root, f)), [])
})

// Upstream and jobs meet only through the translator interface (plugins/metering/translator.ts)
// and the reader port jobs declare (plugins/jobs/job-checker.ts); the composition root wires
// them. An import either way would make the two one folder again.
t.test('plugins/upstream and plugins/jobs import nothing of each other', async (t) => {
  const pairs: Array<[string, string]> = [['upstream', 'jobs'], ['jobs', 'upstream']]
  for (const [from, to] of pairs) {
    const files = tsSources(join(plugins, from))
    t.ok(files.length > 3, `scanned plugins/${from} (${files.length} files)`)
    const target = join(plugins, to)
    for (const file of files) {
      const into = specifiers(readFileSync(file, 'utf8')).filter((s) => resolve(file, '..', s).startsWith(target + '/'))
      t.strictSame(into, [], `${relative(root, file)} imports nothing from plugins/${to}/`)
    }
  }
})

/** Folder pairs under plugins/ that import each other (either file of one reaching into the other). */
function twoWayPairs (): string[] {
  const edges = new Set<string>()
  for (const file of tsSources(plugins)) {
    const from = relative(plugins, file).split('/')[0]
    for (const s of specifiers(readFileSync(file, 'utf8'))) {
      const target = relative(plugins, resolve(file, '..', s))
      if (target.startsWith('..') || !target.includes('/')) continue
      const to = target.split('/')[0]
      if (to !== from) edges.add(`${from}→${to}`)
    }
  }
  const pairs = new Set<string>()
  for (const e of edges) {
    const [a, b] = e.split('→') as [string, string]
    if (edges.has(`${b}→${a}`)) pairs.add([a, b].sort().join('↔'))
  }
  return [...pairs].sort()
}

// Issue 28: none. Two folders that import each other are one folder in two places; what they
// share belongs in the lower one (plain shapes in plugins/shapes/, key material in keys/, the
// concerns' config checks handed to config/ by the composition root).
t.test('no two folders under plugins/ import each other', async (t) => {
  t.strictSame(twoWayPairs(), [])
})
