// `npm test`'s first step: the package build (dist/), the test build (one tsc over the whole
// tree into .test-build/: the type check and the JavaScript tap runs) and the lint, side by side
// since none needs another's output (on two cores: about the time of the longest instead of the
// sum). Each one's output is printed whole when it ends; any failure fails the step.
import { spawn } from 'node:child_process'

const steps = ['build', 'test:compile', 'lint']
const started = Date.now()
const results = await Promise.all(steps.map((name) => new Promise((resolve) => {
  const child = spawn('npm', ['run', '--silent', name], { stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  child.stdout.on('data', (chunk) => { out += chunk })
  child.stderr.on('data', (chunk) => { out += chunk })
  child.on('close', (code, signal) => {
    const seconds = ((Date.now() - started) / 1000).toFixed(1)
    process.stdout.write(`> npm run ${name}: ${code === 0 ? 'ok' : `failed (${signal ?? `exit ${code}`})`} after ${seconds} s\n${out}`)
    resolve(code === 0)
  })
})))
process.exit(results.every(Boolean) ? 0 : 1)
