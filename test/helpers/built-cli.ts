// The CLI as `npm start` and an operator run it: dist/bin/model-gateway.js, built by `npm test`
// before tap runs. A test that spawns it many times saves tsx's start-up per spawn (about half
// a second of CPU each). A build older than a source file it is made from fails loudly instead
// of testing old code.
import { existsSync, readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { ROOT } from './paths.js'

export const BUILT_CLI = join(ROOT, 'dist', 'bin', 'model-gateway.js')

function newestSource (dir: string): number {
  let newest = 0
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) newest = Math.max(newest, newestSource(path))
    else if (entry.name.endsWith('.ts')) newest = Math.max(newest, statSync(path).mtimeMs)
  }
  return newest
}

/** The built CLI's path; throws when it is missing or older than its entry or a source under plugins/. */
export function builtCli (): string {
  if (!existsSync(BUILT_CLI)) throw new Error(`${BUILT_CLI} is missing: run \`npm run build\` (npm test builds first)`)
  const source = Math.max(newestSource(join(ROOT, 'plugins')), statSync(join(ROOT, 'bin', 'model-gateway.ts')).mtimeMs)
  if (statSync(BUILT_CLI).mtimeMs < source) throw new Error(`${BUILT_CLI} is older than the sources: run \`npm run build\` (npm test builds first)`)
  return BUILT_CLI
}
