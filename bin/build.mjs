// `npm run build`: compiles the tree to dist/ (tsc -p tsconfig.build.json, with the .d.ts of
// the package entry) and marks the CLI executable. `--if-stale` (prepare, prestart) builds only
// when a source is newer than the last build, and says so when it does: `npm ci` builds once,
// and `npm start` after it starts at once instead of compiling again.
// Plain JavaScript, so it runs before anything is compiled.
import { execFileSync } from 'node:child_process'
import { chmodSync, existsSync, readdirSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { createRequire } from 'node:module'
import { writeSchemaValidators } from './schema-validators.mjs'

const STAMP = 'dist/.build-stamp'
const SOURCES = ['index.ts', 'plugins', 'bin', 'schemas', 'tsconfig.json', 'tsconfig.build.json', 'package.json']

/** The newest modification time (ms) under the given paths, TypeScript sources and the configs. */
function newest (paths) {
  let latest = 0
  for (const path of paths) {
    if (!existsSync(path)) continue
    const stat = statSync(path)
    if (stat.isDirectory()) {
      latest = Math.max(latest, newest(readdirSync(path).map((name) => join(path, name))))
    } else if (path.endsWith('.ts') || path.endsWith('.json')) {
      latest = Math.max(latest, stat.mtimeMs)
    }
  }
  return latest
}

const ifStale = process.argv.includes('--if-stale')
if (ifStale && existsSync(STAMP) && statSync(STAMP).mtimeMs >= newest(SOURCES)) process.exit(0)
if (ifStale) process.stderr.write(`model-gateway: building dist/ (${existsSync(STAMP) ? 'sources changed since the last build' : 'first build'}; tsc takes 15 s or more)\n`)
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc')
try {
  execFileSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { stdio: 'inherit' })
} catch {
  process.stderr.write('model-gateway: the build failed (the compiler\'s report is above)\n')
  process.exit(1)
}
chmodSync('dist/bin/model-gateway.js', 0o755)
// The config validators compiled ahead of time, beside dist/'s validate.js.
writeSchemaValidators('schemas', 'dist/plugins/foundation/config/schema-validators.cjs')
writeFileSync(STAMP, `${new Date().toISOString()}\n`)
