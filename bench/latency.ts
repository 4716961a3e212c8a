// One-connection latency (npm run bench -- --latency): one client connection, each request sent
// when the previous answer was read whole, so no request waits behind another; the time of each
// request (from sending it to the last byte of its answer, and to its response headers) is
// recorded in µs. Targets: the bare proxy, the gateway embedded, gateway-pg (PostgreSQL +
// Redis), and Portkey when BENCH_PORTKEY_DIR is set; chat JSON and chat SSE. The client runs in
// the bench process (the load core), each target alone on the target core. The billing
// targets' ledger is checked after each measured run as in the main bench.
import { Client } from 'undici'
import { checkBilling, table, type RunBilling } from './report.js'
import { WITH_PORTKEY, WORKLOADS, type Workload } from './scenarios.js'
import { BASELINE, targetNamed, type RunningTarget, type TargetEnv } from './targets.js'

export const LATENCY = {
  targets: [BASELINE, 'gateway', 'gateway-pg', ...(WITH_PORTKEY ? ['portkey'] : [])],
  full: { warmupS: 1, durationS: 5 },
  quick: { warmupS: 0.5, durationS: 2 }
} as const

export interface LatencyTiming { warmupS: number, durationS: number }

/** Milliseconds. */
export interface Percentiles { p50: number, p99: number, p999: number, mean: number, max: number }

export interface LatencyResult {
  workload: string
  target: string
  requests: number
  /** Send to last byte of the answer. */
  total: Percentiles
  /** Send to the response headers (for a stream: before its first chunk was read). */
  headers: Percentiles
  billing: RunBilling | null
  failures: string[]
}

/** Nearest-rank percentiles of µs samples, in ms. */
export function percentiles (samplesUs: readonly number[]): Percentiles {
  const s = [...samplesUs].sort((a, b) => a - b)
  const at = (p: number): number => (s[Math.min(s.length - 1, Math.max(0, Math.ceil(p * s.length) - 1))] ?? Number.NaN) / 1000
  const mean = s.length === 0 ? Number.NaN : s.reduce((a, b) => a + b, 0) / s.length / 1000
  return { p50: at(0.5), p99: at(0.99), p999: at(0.999), mean, max: (s.at(-1) ?? Number.NaN) / 1000 }
}

interface Samples { total: number[], headers: number[], failures: string[] }

/** Requests one after another on one connection for `durationS`; every answer must be 2xx and whole. */
async function oneConnection (url: string, workload: Workload, headers: Record<string, string>, durationS: number): Promise<Samples> {
  // An undici Client is one connection.
  const client = new Client(url, { pipelining: 1 })
  const out: Samples = { total: [], headers: [], failures: [] }
  const allHeaders = { ...workload.headers, ...headers }
  const deadline = performance.now() + durationS * 1000
  try {
    while (performance.now() < deadline) {
      const t0 = performance.now()
      const res = await client.request({ path: workload.path, method: workload.method, headers: allHeaders, body: workload.body })
      const t1 = performance.now()
      const body = await res.body.text()
      const t2 = performance.now()
      if (res.statusCode < 200 || res.statusCode >= 300) {
        if (out.failures.length < 5) out.failures.push(`status ${res.statusCode}: ${body.slice(0, 200)}`)
        continue
      }
      if (!workload.verify(body)) {
        if (out.failures.length < 5) out.failures.push(`incomplete body: ${body.slice(0, 200)}`)
        continue
      }
      out.headers.push((t1 - t0) * 1000)
      out.total.push((t2 - t0) * 1000)
    }
  } finally {
    await client.close()
  }
  return out
}

async function measure (running: RunningTarget, name: string, workload: Workload, headers: Record<string, string>, bills: boolean, timing: LatencyTiming): Promise<LatencyResult> {
  const warm = await oneConnection(running.url, workload, headers, timing.warmupS)
  const before = bills ? await running.child.report() : null
  const run = await oneConnection(running.url, workload, headers, timing.durationS)
  const failures = [...warm.failures.map((f) => `warm-up: ${f}`), ...run.failures]
  let billing: RunBilling | null = null
  if (bills) {
    const after = await running.child.report()
    if (before === null || after === null) throw new Error(`${name} bills but its child keeps no report`)
    billing = checkBilling(before, after, run.total.length, 1)
    if (billing.problem !== null) failures.push(`billing: ${billing.problem}`)
  }
  return { workload: workload.name, target: name, requests: run.total.length, total: percentiles(run.total), headers: percentiles(run.headers), billing, failures }
}

/** Starts each target in turn and measures both workloads through it, then stops it. */
export async function runLatency (env: TargetEnv, timing: LatencyTiming, log: (s: string) => void): Promise<LatencyResult[]> {
  const results: LatencyResult[] = []
  for (const name of LATENCY.targets) {
    const target = targetNamed(name)
    const running = await target.start(env)
    try {
      const { headers } = target.prepare ? await target.prepare(running) : { headers: {} }
      for (const workload of [WORKLOADS.chat, WORKLOADS.chatStream]) {
        const r = await measure(running, name, workload, headers, target.bills === true, timing)
        log(`  ${workload.name.padEnd(20)} ${name.padEnd(12)} ${String(r.requests).padStart(6)} requests  p50 ${r.total.p50.toFixed(2)} ms  p99 ${r.total.p99.toFixed(2)} ms  p99.9 ${r.total.p999.toFixed(2)} ms${r.billing ? `  charges ${r.billing.charges} / 2xx ${r.billing.answered2xx}` : ''}${r.failures.length > 0 ? '  FAILURES' : ''}`)
        results.push(r)
      }
    } finally {
      await running.stop()
    }
  }
  return results
}

export function latencyTable (results: readonly LatencyResult[]): string {
  const ms = (x: number): string => x.toFixed(2)
  const base = (workload: string): LatencyResult | undefined => results.find((r) => r.workload === workload && r.target === BASELINE)
  return table(
    ['scenario', 'target', 'requests', 'p50 ms', 'p99 ms', 'p99.9 ms', 'mean ms', 'max ms', 'headers p50 ms', 'p50 − bare ms', 'billing'],
    results.map((r) => {
      const b = base(r.workload)
      return [
        r.workload,
        r.target,
        String(r.requests),
        ms(r.total.p50),
        ms(r.total.p99),
        ms(r.total.p999),
        ms(r.total.mean),
        ms(r.total.max),
        ms(r.headers.p50),
        b === undefined || b === r ? '-' : ms(r.total.p50 - b.total.p50),
        r.billing === null ? '-' : r.billing.problem === null ? `ok (${r.billing.charges} charges)` : 'FAILED'
      ]
    }),
    new Set([2, 3, 4, 5, 6, 7, 8, 9])
  )
}
