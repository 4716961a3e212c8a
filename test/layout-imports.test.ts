// The production tree stands alone: nothing under plugins/ (or a built bin script) reaches into
// test/, so the build and the mounted package never carry test helpers (they live in test/helpers/).
// And the layers hold: neighbours that meet through an interface do not import each other
// (upstream and jobs), no two folders import each other at all, the pipeline host imports no
// concern, and the imports that still reach past a concern's index.ts are listed, a list that
// may only shrink.
import { existsSync, readFileSync } from 'node:fs'
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

/**
 * The concerns: the folders the composition root takes a gateway plugin from (`import {
 * authPlugin } from '../auth/index.js'` in plugins/gateway/index.ts). Read from the root, so a
 * new concern counts the day it is listed there.
 */
function concerns (): string[] {
  const root = readFileSync(join(plugins, 'gateway', 'index.ts'), 'utf8')
  const out = new Set<string>()
  for (const m of root.matchAll(/^import \{([^}]*)\} from '\.\.\/([^/']+)\/index\.js'/gm)) {
    const names = (m[1] ?? '').split(',').map((n) => n.trim()).filter((n) => !n.startsWith('type '))
    if (names.some((n) => /^[a-z]\w*Plugin$/.test(n))) out.add(m[2] ?? '')
  }
  return [...out].sort()
}

/** Each cross-folder import of a module of `folder`, as `from-file -> target` (paths under plugins/). */
function importsInto (folders: ReadonlySet<string>): Array<{ from: string, target: string }> {
  const out: Array<{ from: string, target: string }> = []
  for (const file of tsSources(plugins)) {
    const from = relative(plugins, file)
    for (const s of specifiers(readFileSync(file, 'utf8'))) {
      const target = relative(plugins, resolve(file, '..', s))
      if (target.startsWith('..') || !target.includes('/')) continue
      const folder = target.split('/')[0] ?? ''
      if (folder !== from.split('/')[0] && folders.has(folder)) out.push({ from, target })
    }
  }
  return out
}

t.test('the concerns are read from the composition root, each a folder with an index.ts', async (t) => {
  const list = concerns()
  t.ok(list.length >= 12, `found the concerns (${list.join(', ')})`)
  for (const c of ['auth', 'models', 'upstream', 'wallet']) t.ok(list.includes(c), `${c} is a concern`)
  t.notOk(list.includes('pipeline'), 'the host is not a concern (GatewayPlugin is a type)')
  for (const c of list) t.ok(existsSync(join(plugins, c, 'index.ts')), `plugins/${c}/index.ts exists`)
})

// The host runs the phases and knows no concern: it imports the foundation (config, errors,
// routes) and the plain shapes, never a folder the composition root takes a plugin from.
t.test('the pipeline host imports no concern', async (t) => {
  const list = new Set(concerns())
  const files = tsSources(join(plugins, 'pipeline'))
  t.ok(files.length >= 4, `scanned plugins/pipeline (${files.length} files)`)
  for (const file of files) {
    const into = specifiers(readFileSync(file, 'utf8'))
      .map((s) => relative(plugins, resolve(file, '..', s)).split('/')[0] ?? '')
      .filter((folder) => list.has(folder))
    t.strictSame(into, [], `${relative(root, file)} imports no concern`)
  }
})

// Another folder reaches a concern through its index.ts. The imports that still go past it are
// listed (37 when this test was written; on main before issue 28's layering, 43), and the
// list may only shrink: a new one fails here, and one taken through the index must leave the list.
t.test('imports past a concern\'s index.ts from another folder are exactly the known ones', async (t) => {
  const list = new Set(concerns())
  const past = importsInto(list).filter(({ target }) => !/^[^/]+\/index\.(js|ts)$/.test(target))
  t.strictSame([...new Set(past.map(({ from, target }) => `${from} -> ${target}`))].sort(), [
    'accounts/service.ts -> wallet/bound.js',
    'accounts/service.ts -> wallet/wallet.js',
    'admin/routes.ts -> access-log/route-calls.js',
    'admin/usage.ts -> wallet/wallet.js',
    'admission/index.ts -> operations/billable-parameters.js',
    'console/index.ts -> access-log/route-calls.js',
    'gateway/plan.ts -> auth/key-headers.js',
    'gateway/plan.ts -> jobs/job-routes.js',
    'gateway/plan.ts -> limits/policy.js',
    'gateway/plan.ts -> listings/compile.js',
    'gateway/plan.ts -> models/catalogue.js',
    'gateway/plan.ts -> operations/compile.js',
    'gateway/plan.ts -> request/body.js',
    'gateway/plan.ts -> upstream/providers.js',
    'listings/compile.ts -> operations/compile.js',
    'listings/index.ts -> models/catalogue.js',
    'listings/index.ts -> models/model-id.js',
    'metering/feature-usage.ts -> operations/feature-compile.js',
    'metering/include-usage.ts -> request/json-bytes.js',
    'metering/meter-types.ts -> operations/compile.js',
    'metering/passthrough.ts -> operations/image-tier-check.js',
    'metering/passthrough.ts -> request/body-rules.js',
    'metering/passthrough.ts -> request/json-model.js',
    'metering/passthrough.ts -> request/multipart-model.js',
    'metering/passthrough.ts -> request/uses-caps.js',
    'metering/translator.ts -> operations/compile.js',
    'models/capabilities.ts -> admission/magic.js',
    'operations/billable-parameters.ts -> request/multipart-model.js',
    'operations/features-plugin.ts -> request/uses-caps.js',
    'operations/uses-caps.ts -> request/uses-caps.js',
    'routes/compile.ts -> operations/compile.js',
    'server/reload.ts -> request/server-bounds.js',
    'server/server.ts -> request/server-bounds.js',
    'upstream/forward-phase.ts -> models/catalogue.js',
    'upstream/index.ts -> models/catalogue.js',
    'wallet/hold.ts -> operations/image-tier-check.js',
    'wallet/settle.ts -> models/catalogue.js'
  ])
})
