// npm run bench:instructions [-- <target> ...] [--requests N] [--warmup N] [--connections N] [--keep DIR]
//
// Counts the CPU instructions a target executes per request, under valgrind's callgrind. Wall
// time and CPU time move with whatever else the machine runs (this 2-core machine's bare proxy
// needed 151–319 µs of CPU per request in one afternoon); an instruction count does not, so two
// trees (or two commits) can be compared while other work runs. It is a complement to
// `npm run bench`, whose throughput ratios are the figures of record: instructions ignore cache
// misses, syscalls' kernel time and parallelism.
//
// Method: the target runs under `valgrind --tool=callgrind --instr-atstart=no`; a warm-up
// (so V8 has compiled the hot code) runs uncounted, then instrumentation is switched on with
// callgrind_control, a fixed number of requests is sent over 4 connections (`--connections`: one
// measures the cost a request pays alone, with no group commit to share), instrumentation is
// switched off and the dump's total (every thread of the process: V8's compiler and GC threads
// too) divided by the requests. `--syscalls` counts system calls the same way, with strace -c
// attached around the measured requests instead of valgrind.
import { execFileSync, spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync, chmodSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import autocannon from 'autocannon'
import { compileChildren } from './child-process.js'
import { WORKLOADS, type Workload } from './scenarios.js'
import { startMock, targetNamed } from './targets.js'

const USAGE = 'usage: npm run bench:instructions [-- <target> ...] [--requests N] [--warmup N] [--workload chat|chatStream] [--connections N] [--keep DIR] [--syscalls]'

interface Options { targets: string[], requests: number, warmup: number, workloads: Workload[], syscalls: boolean, connections: number, keep: string | undefined }

function parse (argv: readonly string[]): Options {
  const o: Options = { targets: [], requests: 2000, warmup: 4000, workloads: [], syscalls: false, connections: 4, keep: undefined }
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!
    const value = (): number => {
      const n = Number(argv[++i])
      if (!Number.isInteger(n) || n <= 0) throw new Error(`${a} needs a positive integer\n${USAGE}`)
      return n
    }
    if (a === '--syscalls') o.syscalls = true
    else if (a === '--requests') o.requests = value()
    else if (a === '--warmup') o.warmup = value()
    else if (a === '--connections') o.connections = value()
    else if (a === '--keep') o.keep = argv[++i]
    else if (a === '--workload') {
      const w = WORKLOADS[argv[++i] as keyof typeof WORKLOADS]
      if (!w) throw new Error(`unknown workload\n${USAGE}`)
      o.workloads.push(w)
    } else if (a.startsWith('-')) throw new Error(`unknown option ${a}\n${USAGE}`)
    else o.targets.push(a)
  }
  if (o.targets.length === 0) o.targets = ['bare', 'gateway-core', 'gateway']
  if (o.workloads.length === 0) o.workloads = [WORKLOADS.chat, WORKLOADS.chatStream]
  return o
}

async function send (url: string, w: Workload, amount: number): Promise<number> {
  const r = await autocannon({
    url: url + w.path,
    method: w.method,
    headers: w.headers,
    body: w.body,
    connections: opts.connections,
    pipelining: 1,
    amount,
    timeout: 60,
    verifyBody: w.verify
  })
  const bad = r.errors + r.timeouts + r.non2xx + r.mismatches
  if (bad > 0) throw new Error(`${bad} of ${amount} requests failed (errors ${r.errors}, timeouts ${r.timeouts}, non-2xx ${r.non2xx}, mismatches ${r.mismatches}; statuses ${JSON.stringify(r.statusCodeStats)})`)
  return r.requests.total
}

/** Total instructions (Ir) of every dump callgrind wrote for `pid`. */
function dumpedInstructions (dir: string, pid: number): number {
  let total = 0
  for (const f of readdirSync(dir)) {
    if (!f.startsWith(`cg.${pid}`)) continue
    const m = /^totals: (\d+)/m.exec(readFileSync(join(dir, f), 'utf8'))
    if (m) total += Number(m[1])
  }
  return total
}

const opts = parse(process.argv.slice(2))
if (opts.keep !== undefined) mkdirSync(opts.keep, { recursive: true })
const dir = mkdtempSync(join(tmpdir(), 'gw-instr-'))
const wrapper = join(dir, 'node-under-callgrind')
writeFileSync(wrapper, `#!/bin/sh\nexec valgrind --tool=callgrind --instr-atstart=no --smc-check=all-non-file -q --callgrind-out-file=${dir}/cg.%p ${process.execPath} "$@"\n`)
chmodSync(wrapper, 0o755)

/** Instructions of `sent` requests: collection on around them, then the dump's total. */
async function countInstructions (pid: number, url: string, w: Workload): Promise<{ sent: number, count: number }> {
  execFileSync('callgrind_control', ['--instr=on', String(pid)], { stdio: 'ignore' })
  const sent = await send(url, w, opts.requests)
  execFileSync('callgrind_control', ['--instr=off', String(pid)], { stdio: 'ignore' })
  execFileSync('callgrind_control', ['--dump', String(pid)], { stdio: 'ignore' })
  const count = dumpedInstructions(dir, pid)
  for (const f of readdirSync(dir)) {
    if (!f.startsWith(`cg.${pid}`)) continue
    // --keep: the dumps stay, for callgrind_annotate (native frames: SQLite, libuv, V8's runtime).
    if (opts.keep !== undefined) renameSync(join(dir, f), join(opts.keep, `${f}.${w.name.replace(/\W+/g, '-')}`))
    else rmSync(join(dir, f))
  }
  return { sent, count }
}

/** System calls of `sent` requests: strace -c attached around them (every thread). */
async function countSyscalls (pid: number, url: string, w: Workload): Promise<{ sent: number, count: number, detail: string }> {
  const out = join(dir, `strace.${pid}`)
  const tracer = spawn('strace', ['-f', '-c', '-o', out, '-p', String(pid)], { stdio: 'ignore' })
  await new Promise((resolve) => setTimeout(resolve, 1000)) // attached to every thread
  const sent = await send(url, w, opts.requests)
  const exited = new Promise((resolve) => tracer.once('exit', resolve))
  tracer.kill('SIGINT')
  await exited
  const text = readFileSync(out, 'utf8')
  rmSync(out)
  const total = /\n[- ]+\n\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)(?:\s+\d+)?\s+total/.exec(text)
  const lines = text.split('\n').filter((l) => /^\s*[\d.]+\s+[\d.]+\s+\d+\s+\d+/.test(l) && !l.includes('total'))
  const detail = lines.map((l) => {
    const f = l.trim().split(/\s+/)
    return `${f[f.length - 1]} ${(Number(f[3]) / sent).toFixed(2)}`
  }).join(', ')
  return { sent, count: total ? Number(total[1]) : Number.NaN, detail }
}

compileChildren()
const mock = await startMock()
const env = { BENCH_UPSTREAM_URL: mock.url }
const rows: string[] = []
try {
  for (const name of opts.targets) {
    const running = await targetNamed(name).start(env, opts.syscalls ? {} : { execPath: wrapper, startTimeoutMs: 300_000 })
    try {
      for (const w of opts.workloads) {
        await send(running.url, w, opts.warmup)
        let line: string
        if (opts.syscalls) {
          const r = await countSyscalls(running.pid, running.url, w)
          line = `${w.name.padEnd(22)} ${name.padEnd(16)} ${(r.count / r.sent).toFixed(2).padStart(8)} system calls/request  (${r.sent} requests: ${r.detail})`
        } else {
          const r = await countInstructions(running.pid, running.url, w)
          line = `${w.name.padEnd(22)} ${name.padEnd(16)} ${(r.count / r.sent / 1000).toFixed(1).padStart(8)} k instructions/request  (${r.sent} requests)`
        }
        rows.push(line)
        process.stdout.write(line + '\n')
      }
    } finally {
      await running.stop()
    }
  }
} finally {
  await mock.stop()
  rmSync(dir, { recursive: true, force: true })
}
process.stdout.write('\n' + rows.join('\n') + '\n')
