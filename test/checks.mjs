// `npm test`'s first step: the package build (dist/, only when a source is newer than it: `npm ci`
// built it already) and the tests' JavaScript (test/emit.mjs: each source transpiled on its own
// into .test-build/, 6 CPU-s against tsc's 15 with the type check), side by side. The type check
// and the lint are not here: test/run.mjs runs them as two lanes beside the test files, where
// they fill the time the files spend waiting on timers and sockets. Each step's output is
// printed whole when it ends; any failure fails the step.
import { spawn } from 'node:child_process'

const steps = [
  ['npm run build (if stale)', process.execPath, ['bin/build.mjs', '--if-stale']],
  ['npm run test:compile', process.execPath, ['test/emit.mjs']]
]
const started = Date.now()
const results = await Promise.all(steps.map(([name, command, args]) => new Promise((resolve) => {
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  child.stdout.on('data', (chunk) => { out += chunk })
  child.stderr.on('data', (chunk) => { out += chunk })
  child.on('close', (code, signal) => {
    const seconds = ((Date.now() - started) / 1000).toFixed(1)
    process.stdout.write(`> ${name}: ${code === 0 ? 'ok' : `failed (${signal ?? `exit ${code}`})`} after ${seconds} s\n${out}`)
    resolve(code === 0)
  })
})))
process.exit(results.every(Boolean) ? 0 : 1)
