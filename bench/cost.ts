// CPU per request at a fixed request rate (npm run bench:cost [-- target …]): where each
// request's CPU goes (the target process, Redis, PostgreSQL), independent of how fast the
// machine runs at that moment. Throughput runs (npm run bench) swing by tens of percent on a
// shared VM; at a fixed rate below saturation the CPU each process spends per request swings
// far less, so an A/B of a change to the request path reads here first.
//
// Each target (default: bare, gateway, gateway-pg) is started alone on the target core, warmed
// up, then loaded at BENCH_COST_RATE requests/s (default 1500) on BENCH_COST_CONNECTIONS
// connections (50) for BENCH_COST_SECONDS (10) per workload. CPU is read from /proc for the
// target, the redis-server process and every postgres process, before and after
// (BENCH_COST_PG_DETAIL=1 splits PostgreSQL's into backends, WAL writer, …).
import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { compileChildren, CORES, pinToCore } from './child-process.js'
import { processSeconds, type CpuKind } from './cpu.js'
import { describeFailures, failed, runLoad } from './load.js'
import { WORKLOADS } from './scenarios.js'
import { startMock, targetNamed } from './targets.js'

const RATE = Number(process.env.BENCH_COST_RATE ?? 1500)
const CONNECTIONS = Number(process.env.BENCH_COST_CONNECTIONS ?? 50)
const SECONDS = Number(process.env.BENCH_COST_SECONDS ?? 10)
const WARMUP_S = Number(process.env.BENCH_COST_WARMUP_SECONDS ?? 10)
/** BENCH_COST_CPU=user|sys counts only that part of each process's CPU time. */
const CPU_KIND: CpuKind = process.env.BENCH_COST_CPU === 'user' || process.env.BENCH_COST_CPU === 'sys' ? process.env.BENCH_COST_CPU : 'all'

/** CPU seconds of a process, 0 once it is gone (a postgres backend that ended between reads). */
function cpuSeconds (pid: number): number {
  try {
    return processSeconds(pid, CPU_KIND)
  } catch {
    return 0
  }
}

function pidsOf (name: string): number[] {
  try {
    return execFileSync('pgrep', ['-x', name], { encoding: 'utf8' }).trim().split('\n').filter((s) => s !== '').map(Number)
  } catch {
    return []
  }
}

/** What a postgres process is (backend, walwriter, …), from its title. */
function pgKind (pid: number): string {
  try {
    const title = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ').trim()
    if (/\d+\.\d+\.\d+\.\d+\(\d+\)/.test(title)) return 'backends'
    return title.replace(/^postgres: (\d+\/\w+: )?/, '').split(' ')[0] ?? 'postgres'
  } catch {
    return 'gone'
  }
}

/** CPU seconds of each group now; postgres backends are counted by pid across both reads. */
function sample (target: number): { target: number, redis: number, pg: Map<number, number> } {
  const pg = new Map<number, number>()
  for (const pid of pidsOf('postgres')) pg.set(pid, cpuSeconds(pid))
  return { target: cpuSeconds(target), redis: pidsOf('redis-server').reduce((s, p) => s + cpuSeconds(p), 0), pg }
}

async function main (): Promise<void> {
  const names = process.argv.slice(2).length > 0 ? process.argv.slice(2) : ['bare', 'gateway', 'gateway-pg']
  pinToCore(process.pid, CORES.load)
  compileChildren()
  const mock = await startMock()
  const env = { BENCH_UPSTREAM_URL: mock.url }
  process.stdout.write(`CPU per request at ${RATE} req/s, ${CONNECTIONS} connections, ${SECONDS} s per workload after ${WARMUP_S} s warm-up\n`)
  process.stdout.write('target       workload             req     p50 ms  p99 ms  target µs  redis µs  pg µs\n')
  try {
    for (const name of names) {
      const t = targetNamed(name)
      const running = await t.start(env)
      try {
        const prepared = t.prepare ? await t.prepare(running) : { headers: {} }
        for (const w of [WORKLOADS.chat, WORKLOADS.chatStream]) {
          const base = { url: running.url, workload: w, headers: prepared.headers, keys: prepared.keys, connections: CONNECTIONS, rate: RATE }
          await runLoad({ ...base, durationS: WARMUP_S })
          const a = sample(running.pid)
          const r = await runLoad({ ...base, durationS: SECONDS })
          const b = sample(running.pid)
          let pg = 0
          const byKind = new Map<string, number>()
          for (const [pid, s] of b.pg) {
            const used = s - (a.pg.get(pid) ?? 0)
            pg += used
            const kind = pgKind(pid)
            byKind.set(kind, (byKind.get(kind) ?? 0) + used)
          }
          const per = (s: number): string => (1e6 * s / r.requests).toFixed(0).padStart(9)
          process.stdout.write(`${name.padEnd(12)} ${w.name.padEnd(20)} ${String(r.requests).padStart(6)} ${r.p50Ms.toFixed(1).padStart(7)} ${r.p99Ms.toFixed(1).padStart(7)} ${per(b.target - a.target)} ${per(b.redis - a.redis)} ${per(pg)}${failed(r.failures) ? `  FAILED: ${describeFailures(r.failures)}` : ''}\n`)
          if (pg > 0 && process.env.BENCH_COST_PG_DETAIL === '1') process.stdout.write(`  postgres: ${[...byKind].filter(([, v]) => v > 0).map(([k, v]) => `${k} ${(1e6 * v / r.requests).toFixed(0)} µs`).join(', ')}\n`)
        }
      } finally {
        await running.stop()
      }
    }
  } finally {
    await mock.stop()
  }
}

await main()
process.exit(0)
