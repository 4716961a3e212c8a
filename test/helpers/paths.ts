// Where a test finds the repository's files. `npm test` runs the tests compiled
// (.test-build/test/x.test.js, one tsc for the whole tree), `npx tap test/x.test.ts` runs them
// from source under tsx: a path built from a test's own location (`new URL('../x',
// import.meta.url)`) points into .test-build/ in the first case, so tests take the repository's
// files (configs, docs, fixtures, the .ts sources some tests read) from here instead.
import { existsSync, readdirSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const HERE = dirname(fileURLToPath(import.meta.url))

function findRoot (): string {
  let dir = HERE
  while (!existsSync(join(dir, 'package.json'))) {
    const parent = dirname(dir)
    if (parent === dir) throw new Error(`no package.json above ${HERE}`)
    dir = parent
  }
  return dir
}

/** The repository's root directory (no trailing slash). */
export const ROOT = findRoot()

/** A path in the repository, from its root: `repoPath('test', 'fixtures', 'config')`. */
export function repoPath (...parts: string[]): string {
  return join(ROOT, ...parts)
}

/** True when the tests run compiled (`npm test`), false from their TypeScript source (tsx). */
export const COMPILED = import.meta.url.endsWith('.js')

/**
 * The node arguments that run a TypeScript module of the repository (`test/fixtures/x.ts`) as a
 * child process the way this test runs: its compiled copy beside this one, or the source under tsx.
 */
export function nodeScript (path: string): string[] {
  if (!COMPILED) return ['--import=tsx', repoPath(path)]
  return [join(HERE, '..', '..', path.replace(/\.ts$/, '.js'))]
}

/** Every `.ts` file under `dir`, at any depth (the tests that read the sources: layout, plan, wallet, errors). */
export function tsSources (dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((d) => {
    const p = join(dir, d.name)
    if (d.isDirectory()) return tsSources(p)
    return d.name.endsWith('.ts') ? [p] : []
  })
}
