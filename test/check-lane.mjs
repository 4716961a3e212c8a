// One check as a TAP test, for test/run.mjs's pool: `node test/check-lane.mjs <name> <script> [args…]`
// runs `node <script> args…` and reports one assertion, `<name>`, that passes when it exits 0;
// on failure the check's own output (the type errors, the lint problems) is the diagnostic.
import { spawnSync } from 'node:child_process'

const [name, script, ...args] = process.argv.slice(2)
const run = spawnSync(process.execPath, [script, ...args], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 })
const out = `${run.stdout ?? ''}${run.stderr ?? ''}`.trimEnd()
console.log('TAP version 14\n1..1')
if (run.status === 0) {
  console.log(`ok 1 - ${name}`)
} else {
  console.log(`not ok 1 - ${name}\n  ---\n  exit: ${run.status ?? run.signal}\n  ...`)
  for (const line of out.split('\n')) console.log(`# ${line}`)
}
process.exitCode = run.status === 0 ? 0 : 1
