// `npm test`'s first step: the package build (dist/, only when a source is newer than it: `npm ci`
// built it already), the test build (one tsc over the whole tree into .test-build/: the type
// check and the JavaScript the tests run) and the lint, side by side since none needs another's
// output (on two cores: about the time of the longest instead of the sum). Each one's output is
// printed whole when it ends; any failure fails the step.
import { spawn } from 'node:child_process'

const steps = [
  ['npm run build (if stale)', process.execPath, ['bin/build.mjs', '--if-stale']],
  ['npm run test:compile', 'npm', ['run', '--silent', 'test:compile']],
  ['npm run lint', 'npm', ['run', '--silent', 'lint']]
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
