// `npm test`'s second step: every compiled test file (.test-build/test/**/*.test.js, built by the
// first step) as a subtest of tap's own root, `TEST_JOBS` at a time, each in a plain `node`
// process, with the type check and the lint as two more subtests of the same pool. Default 4 on
// the 2-core CI machine: many files wait on timers, slow clients or the paced soak part of their
// time (the whole run measured there on a quiet machine: 312 s at 4 jobs with the two checks in
// the pool, against 320 s at 3 jobs without them, which then took about 30 s more before it).
//
// Why not the `tap` runner: it puts two module loaders into every test process and every
// process a test spawns (@tapjs/processinfo, unconditionally, through NODE_OPTIONS, and
// @tapjs/mock), and every module a process loads then goes through the loader thread. Measured on
// the 2-core CI machine: loading the gateway in a test process took 0.9 s of CPU plain and 2.1 s
// with them; one gateway test file (billing-units) 4.9 CPU-seconds plain against 8.9 under the
// runner. No test uses tap's mocks or coverage. This keeps tap's own machinery for the rest:
// `t.spawn` runs, buffers, parses and times out each file exactly as the runner does (same
// 120 s limit, same TAP stream and `# { total, pass, fail }` summary); `env -u NODE_OPTIONS`
// drops the loader its spawn adds (and so any NODE_OPTIONS of the caller: pass node flags to a
// single file with `node --flag .test-build/test/x.test.js`).
//
// `node test/run.mjs [part …]` runs only the files whose path contains one of the parts.
// `TEST_CPU_LOG=file` appends each file's CPU seconds (user, system; its own process and all it
// waited for) and wall seconds to `file`, through GNU time: where the suite's time goes.
// `npx tap test/x.test.ts` still runs one source file under tsx (package.json's "tap" section).
import { readdirSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'

const DIR = '.test-build/test'
const TIMEOUT_S = 120
// The type check and the lint are one process each over the whole tree, with no cache in a
// fresh clone: alone they take 15–25 s, but sharing two cores with three test files on a slow
// day the lint took over 120 s (2026-11-27). They are not tests that may hang; a bound well
// above their wall time only stops a stuck one.
const CHECK_TIMEOUT_S = 360
const JOBS = Number(process.env.TEST_JOBS ?? 4)
const CPU_LOG = process.env.TEST_CPU_LOG

// The files that take longest (wall seconds on the CI machine, docs/testing.md), the soak (120 s,
// paced) first: started in alphabetical order it ran alone at the end of the run.
const LONGEST_FIRST = [
  'soak.test.js',
  'readme.test.js',
  'admin-cli.test.js',
  'hostile/slow-reader.test.js',
  'ops/startup-failures.test.js',
  'limits-key-cap.test.js',
  'errors-contract.test.js',
  'limits-streams.test.js',
  'ops/shutdown-arriving.test.js',
  'models-publish.test.js',
  'streaming.test.js',
  'wallet-bound-url-context.test.js',
  'console-browser.test.js'
]

const parts = process.argv.slice(2)
const files = readdirSync(DIR, { recursive: true })
  .map(String)
  .filter((f) => f.endsWith('.test.js'))
  .filter((f) => parts.length === 0 || parts.some((p) => join(DIR, f).includes(p)))
  .sort((a, b) => rank(a) - rank(b) || a.localeCompare(b))

function rank (file) {
  const i = LONGEST_FIRST.indexOf(file)
  return i === -1 ? LONGEST_FIRST.length : i
}

// Run with the files when nothing is chosen, or when named (`node test/run.mjs typecheck`).
const CHECKS = [
  // --declaration: the build emits the package's .d.ts, and a type it cannot name there fails
  // `npm ci`'s prepare (TS4023, 2026-11-27), which a plain --noEmit does not report.
  ['typecheck: tsc -p tsconfig.json --noEmit --declaration finds no error', 'node_modules/typescript/bin/tsc', ['-p', 'tsconfig.json', '--noEmit', '--declaration']],
  ['lint: eslint . finds no problem', 'node_modules/eslint/bin/eslint.js', ['.']]
].filter(([name]) => parts.length === 0 || parts.some((p) => name.startsWith(p)))

if (files.length === 0 && CHECKS.length === 0) {
  console.error(`test/run.mjs: no test file in ${DIR} matches ${parts.join(' ')} (run \`npm run test:compile\` first)`)
  process.exit(1)
}

t.setTimeout(0)
t.jobs = JOBS
const env = { ...process.env, TAP_TIMEOUT: String(TIMEOUT_S) }
// The type check and the lint, as two more lanes of the same pool (a failure is a failed
// subtest like any other): test/checks.mjs emits the JavaScript without them.
for (const [name, script, args] of CHECKS) {
  t.spawn(process.execPath, ['test/check-lane.mjs', name, script, ...args], { name, buffered: JOBS > 1, timeout: CHECK_TIMEOUT_S * 1000, env: { ...env, TAP_TIMEOUT: String(CHECK_TIMEOUT_S) } })
}
for (const file of files) {
  const path = join(DIR, file)
  const command = ['env', '-u', 'NODE_OPTIONS', process.execPath, '--enable-source-maps', path]
  if (CPU_LOG !== undefined) command.unshift('/usr/bin/time', '-a', '-o', CPU_LOG, '-f', `%U %S %e ${path}`)
  t.spawn(command[0], command.slice(1), {
    name: path,
    buffered: JOBS > 1,
    timeout: TIMEOUT_S * 1000,
    env
  })
}
