// One-connection latency (npm run bench -- --latency): one client connection, each request sent
// when the previous answer was read whole, so no request waits behind another; the time of each
// request (from sending it to the last byte of its answer, and to its response headers) is
// recorded in µs. Targets: the bare proxy, the gateway embedded, gateway-pg (PostgreSQL +
// Redis: one account), gateway-pg spread over 100 accounts (each request on a random one's key),
// and Portkey when BENCH_PORTKEY_DIR is set; chat JSON and chat SSE. All targets run at once;
// per workload each target gets a warm-up, then the measured time is cut in slices that
// alternate between the targets, so a slow minute of a shared machine falls on all of them.
// The client runs in the bench process (the load core), each target alone on the target core.
// The billing targets' ledger is checked over each workload's measured slices as in the main
// bench (every 2xx answer charged exactly once).
import { Client } from 'undici'
import { checkBilling, table, type RunBilling } from './report.js'
import { WITH_PORTKEY, WORKLOADS, type Workload } from './scenarios.js'
import { BASELINE, type Prepared, type RunningTarget, type Target, type TargetEnv } from './targets.js'

export const LATENCY = {
  targets: [BASELINE, 'gateway', 'gateway-pg', 'pg-100', ...(WITH_PORTKEY ? ['portkey'] : [])],
  full: { warmupS: 1, durationS: 5, slices: 5 },
  quick: { warmupS: 0.5, durationS: 2, slices: 2 }
} as const

export interface LatencyTiming { warmupS: number, durationS: number, slices: number }

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
async function oneConnection (url: string, workload: Workload, prepared: Prepared, durationS: number, out: Samples = { total: [], headers: [], failures: [] }): Promise<Samples> {
  // An undici Client is one connection.
  const client = new Client(url, { pipelining: 1 })
  const allHeaders = { ...workload.headers, ...prepared.headers }
  const keys = prepared.keys
  const deadline = performance.now() + durationS * 1000
  try {
    while (performance.now() < deadline) {
      const t0 = performance.now()
      const headers = keys === undefined ? allHeaders : { ...allHeaders, authorization: `Bearer ${keys[Math.floor(Math.random() * keys.length)]}` }
      const res = await client.request({ path: workload.path, method: workload.method, headers, body: workload.body })
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

interface Running { name: string, target: Target, running: RunningTarget, prepared: Prepared }

/** One workload through every target: warm-ups, then alternating slices, then the billing checks. */
async function measureWorkload (all: readonly Running[], workload: Workload, timing: LatencyTiming): Promise<LatencyResult[]> {
  const warm = new Map<string, string[]>()
  const before = new Map<string, Awaited<ReturnType<RunningTarget['child']['report']>>>()
  for (const t of all) {
    warm.set(t.name, (await oneConnection(t.running.url, workload, t.prepared, timing.warmupS)).failures)
    if (t.target.bills === true) before.set(t.name, await t.running.child.report())
  }
  const samples = new Map<string, Samples>(all.map((t) => [t.name, { total: [], headers: [], failures: [] }]))
  for (let slice = 0; slice < timing.slices; slice++) {
    for (const t of all) await oneConnection(t.running.url, workload, t.prepared, timing.durationS / timing.slices, samples.get(t.name))
  }
  const results: LatencyResult[] = []
  for (const t of all) {
    const run = samples.get(t.name)!
    const failures = [...(warm.get(t.name) ?? []).map((f) => `warm-up: ${f}`), ...run.failures]
    let billing: RunBilling | null = null
    if (t.target.bills === true) {
      const b = before.get(t.name) ?? null
      const after = await t.running.child.report()
      if (b === null || after === null) throw new Error(`${t.name} bills but its child keeps no report`)
      billing = checkBilling(b, after, run.total.length, 1)
      if (billing.problem !== null) failures.push(`billing: ${billing.problem}`)
    }
    results.push({ workload: workload.name, target: t.name, requests: run.total.length, total: percentiles(run.total), headers: percentiles(run.headers), billing, failures })
  }
  return results
}

/** Starts every target, measures both workloads through them, then stops them. */
export async function runLatency (env: TargetEnv, timing: LatencyTiming, lookup: (name: string) => Target, log: (s: string) => void): Promise<LatencyResult[]> {
  const results: LatencyResult[] = []
  const all: Running[] = []
  try {
    for (const name of LATENCY.targets) {
      const target = lookup(name)
      const running = await target.start(env)
      all.push({ name, target, running, prepared: { headers: {} } })
      if (target.prepare) all[all.length - 1]!.prepared = await target.prepare(running)
      log(`  ${name}: pid ${running.pid} ${running.url}  (${target.description})`)
    }
    for (const workload of [WORKLOADS.chat, WORKLOADS.chatStream]) {
      for (const r of await measureWorkload(all, workload, timing)) {
        log(`  ${r.workload.padEnd(20)} ${r.target.padEnd(12)} ${String(r.requests).padStart(6)} requests  p50 ${r.total.p50.toFixed(2)} ms  p99 ${r.total.p99.toFixed(2)} ms  p99.9 ${r.total.p999.toFixed(2)} ms${r.billing ? `  charges ${r.billing.charges} / 2xx ${r.billing.answered2xx}` : ''}${r.failures.length > 0 ? '  FAILURES' : ''}`)
        results.push(r)
      }
    }
  } finally {
    for (const t of all) await t.running.stop()
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
