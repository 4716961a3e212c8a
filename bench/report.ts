// Plain-text tables for the terminal and the JSON document written to bench/results/.
import { formatMoney } from '../plugins/foundation/pricing/money.js'
import type { CpuShare } from './cpu.js'
import type { ChildReport } from './ipc.js'
import type { LoadRun } from './load.js'
import type { MemoryResult } from './memory.js'

/** A billing target over one measured run: the client's count against the ledger's. */
export interface RunBilling {
  /** 2xx answers the load generator received. */
  answered2xx: number
  /** Requests the gateway finished with a 2xx during the run, and those it delivered whole. */
  finished2xx: number
  completed2xx: number
  /** Ledger charge entries written for the run. */
  charges: number
  /** Wallet decrease over the run, nano-units (a bigint as a decimal string). */
  spentNanos: string
  /** Holds still open when the run's report was taken (0 when all were settled). */
  openHolds: number
  /** Most charges allowed beyond answered2xx: requests in flight when the load stopped (one per connection). */
  tail: number
  /** Why the run's billing does not add up; null when it does. */
  problem: string | null
}

/**
 * Compares the child's reports before and after a measured run with the 2xx answers the load
 * generator counted. Every whole 2xx answer must be charged exactly once: charges lie between
 * the client's 2xx count and that plus one in-flight request per connection (answered after
 * the load generator stopped listening), and every request the gateway completed with a 2xx
 * has its charge.
 */
export function checkBilling (before: ChildReport, after: ChildReport, answered2xx: number, connections: number): RunBilling {
  const b0 = before.billing
  const b1 = after.billing
  const finished2xx = after.finished2xx - before.finished2xx
  const completed2xx = after.completed2xx - before.completed2xx
  const charges = b1 && b0 ? b1.charges - b0.charges : 0
  const spent = b1 && b0 ? BigInt(b1.spentNanos) - BigInt(b0.spentNanos) : 0n
  const problems: string[] = []
  if (!b0 || !b1) problems.push('the child reported no ledger figures')
  if (!before.quiet || !after.quiet) problems.push('the gateway was not quiet when its report was taken (requests or holds still open)')
  if (b1 && b1.openHolds > 0) problems.push(`${b1.openHolds} holds still open`)
  if (charges < answered2xx) problems.push(`${answered2xx - charges} of ${answered2xx} 2xx answers have no charge`)
  if (charges > answered2xx + connections) problems.push(`${charges - answered2xx} more charges than 2xx answers (at most ${connections} in flight)`)
  if (charges < completed2xx) problems.push(`${completed2xx - charges} requests the gateway completed with a 2xx have no charge`)
  if (charges > finished2xx) problems.push(`${charges - finished2xx} charges for requests that did not finish with a 2xx`)
  if (charges > 0 && spent <= 0n) problems.push('charges were written but the wallet did not decrease')
  return {
    answered2xx,
    finished2xx,
    completed2xx,
    charges,
    spentNanos: spent.toString(),
    openHolds: b1?.openHolds ?? Number.NaN,
    tail: connections,
    problem: problems.length === 0 ? null : problems.join('; ')
  }
}

export interface MeasuredRun extends LoadRun {
  /** CPU use during the run, percent of one core; null where /proc is unavailable. */
  cpu: CpuShare | null
  /** Ledger check of a billing target; null for targets that do not bill. */
  billing: RunBilling | null
}

/**
 * CPU time the target spent per completed request, in µs. Unlike req/s it hardly moves when
 * other processes compete for the cores, so it is the steadier figure on a shared machine.
 */
export function cpuPerRequestUs (run: MeasuredRun): number {
  if (run.cpu === null || run.requests === 0) return Number.NaN
  return run.cpu.target / 100 * run.cpu.seconds / run.requests * 1e6
}

export interface ThroughputRow {
  workload: string
  target: string
  runs: MeasuredRun[]
  median: { reqPerSec: number, p50Ms: number, p99Ms: number, bytesPerSec: number, targetCpu: number, cpuUsPerRequest: number, otherCpu: number }
  /** req/s of this target over the baseline's on the same workload; null for the baseline. */
  ratio: number | null
  /** The lowest and highest of the per-round ratios `ratio` is the median of; null for the baseline. */
  ratioRange: [number, number] | null
  /** Target CPU per request over the baseline's (above 1: the target costs more); null for the baseline. */
  cpuRatio: number | null
  /** Required req/s ratio over the baseline, if the scenario names one. */
  goal: number | null
}

/** One comparison (scenarios.ts COMPARISONS) on one workload. */
export interface ComparisonRow {
  workload: string
  label: string
  target: string
  over: string
  /** Median over rounds of target's req/s over `over`'s in the same round (pairedRatio). */
  ratio: number
  /** The lowest and highest of those per-round ratios. */
  ratioRange: [number, number]
  /** Target CPU per request over `over`'s (above 1: the target costs more). */
  cpuRatio: number
  goal: number | null
}

/**
 * The median over rounds of `target`'s run k over `over`'s run k (the same round of the
 * alternation, seconds apart): the machine's speed drifts by tens of percent over minutes, and a
 * ratio of two medians taken minutes apart carries that drift; a ratio per round does not.
 */
export function pairedRatio (target: readonly MeasuredRun[], over: readonly MeasuredRun[], value: (r: MeasuredRun) => number): number {
  return median(roundRatios(target, over, value))
}

/** `target`'s run k over `over`'s run k, for each round both have. */
export function roundRatios (target: readonly MeasuredRun[], over: readonly MeasuredRun[], value: (r: MeasuredRun) => number): number[] {
  const n = Math.min(target.length, over.length)
  const ratios: number[] = []
  for (let k = 0; k < n; k++) ratios.push(value(target[k]!) / value(over[k]!))
  return ratios
}

/**
 * The lowest and highest per-round req/s ratio: printed beside the median, since one round on
 * a busy machine can be off by half (a goal met by the median alone is read with that spread).
 */
export function reqPerSecRange (target: readonly MeasuredRun[], over: readonly MeasuredRun[]): [number, number] {
  const ratios = roundRatios(target, over, reqPerSecOf).filter((x) => !Number.isNaN(x))
  return ratios.length === 0 ? [Number.NaN, Number.NaN] : [Math.min(...ratios), Math.max(...ratios)]
}

const reqPerSecOf = (r: MeasuredRun): number => r.reqPerSec

export function compareRows (rows: readonly ThroughputRow[], c: { label: string, target: string, over: string, goal?: number }): ComparisonRow[] {
  const out: ComparisonRow[] = []
  for (const workload of [...new Set(rows.map((r) => r.workload))]) {
    const t = rows.find((r) => r.workload === workload && r.target === c.target)
    const o = rows.find((r) => r.workload === workload && r.target === c.over)
    if (!t || !o) continue
    out.push({
      workload,
      label: c.label,
      target: c.target,
      over: c.over,
      ratio: pairedRatio(t.runs, o.runs, reqPerSecOf),
      ratioRange: reqPerSecRange(t.runs, o.runs),
      cpuRatio: pairedRatio(t.runs, o.runs, cpuPerRequestUs),
      goal: c.goal ?? null
    })
  }
  return out
}

/** Median of the numbers that are not NaN (NaN when none is). */
export function median (xs: readonly number[]): number {
  const s = xs.filter((x) => !Number.isNaN(x)).sort((a, b) => a - b)
  if (s.length === 0) return Number.NaN
  const mid = Math.floor(s.length / 2)
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2
}

export function table (header: readonly string[], rows: readonly (readonly string[])[], rightAligned: ReadonlySet<number>): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)))
  const line = (cells: readonly string[]): string =>
    cells.map((c, i) => rightAligned.has(i) ? c.padStart(widths[i]!) : c.padEnd(widths[i]!)).join('  ').trimEnd()
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n')
}

const mib = (bytes: number): string => (bytes / 1024 / 1024).toFixed(1)
const pct = (p: number): string => Number.isNaN(p) ? 'n/a' : p.toFixed(0)
const ratioCell = (ratio: number, goal: number | null): string =>
  ratio.toFixed(2) + (goal !== null && ratio < goal ? ` (< ${goal.toFixed(2)})` : '')
const rangeCell = (range: [number, number] | null): string =>
  range === null || Number.isNaN(range[0]) ? '-' : `${range[0].toFixed(2)}–${range[1].toFixed(2)}`
const goalCell = (ratio: number, goal: number | null): string =>
  goal === null ? '-' : `≥ ${goal.toFixed(2)} ${ratio >= goal ? 'met' : 'MISSED'}`

export function throughputTable (rows: readonly ThroughputRow[]): string {
  return table(
    ['scenario', 'target', 'req/s', 'p50 ms', 'p99 ms', 'MiB/s', 'CPU µs/req', 'other CPU%', 'req/s ratio', 'rounds', 'CPU/req ratio', 'goal'],
    rows.map((r) => [
      r.workload,
      r.target,
      r.median.reqPerSec.toFixed(0),
      r.median.p50Ms.toFixed(1),
      r.median.p99Ms.toFixed(1),
      mib(r.median.bytesPerSec),
      pct(r.median.cpuUsPerRequest),
      pct(r.median.otherCpu),
      r.ratio === null ? '-' : ratioCell(r.ratio, r.goal),
      rangeCell(r.ratioRange),
      r.cpuRatio === null || Number.isNaN(r.cpuRatio) ? '-' : r.cpuRatio.toFixed(2),
      r.ratio === null ? '' : goalCell(r.ratio, r.goal)
    ]),
    new Set([2, 3, 4, 5, 6, 7, 8, 9, 10])
  )
}

export function comparisonTable (rows: readonly ComparisonRow[]): string {
  return table(
    ['scenario', 'cost', 'ratio of', 'req/s ratio', 'rounds', 'CPU/req ratio', 'goal'],
    rows.map((c) => [
      c.workload,
      c.label,
      `${c.target} / ${c.over}`,
      ratioCell(c.ratio, c.goal),
      rangeCell(c.ratioRange),
      Number.isNaN(c.cpuRatio) ? '-' : c.cpuRatio.toFixed(2),
      goalCell(c.ratio, c.goal)
    ]),
    new Set([3, 4, 5])
  )
}

/** Per billing row: the measured runs' 2xx answers against the ledger's charges, summed. */
export function billingTable (rows: readonly ThroughputRow[]): string {
  const billed = rows.filter((r) => r.runs.some((run) => run.billing !== null))
  return table(
    ['scenario', 'target', '2xx answers', 'ledger charges', 'charges - 2xx', 'gateway 2xx (whole)', 'wallet decrease', 'per charge', 'check'],
    billed.map((r) => {
      const bs = r.runs.map((run) => run.billing).filter((b): b is RunBilling => b !== null)
      const sum = (f: (b: RunBilling) => number): number => bs.reduce((n, b) => n + f(b), 0)
      const answered = sum((b) => b.answered2xx)
      const charges = sum((b) => b.charges)
      const spent = bs.reduce((n, b) => n + BigInt(b.spentNanos), 0n)
      const bad = bs.filter((b) => b.problem !== null).length
      return [
        r.workload,
        r.target,
        String(answered),
        String(charges),
        String(charges - answered),
        `${sum((b) => b.finished2xx)} (${sum((b) => b.completed2xx)})`,
        formatMoney(spent),
        charges === 0 ? '-' : formatMoney(spent / BigInt(charges)),
        bad === 0 ? `ok (≤ ${bs[0]?.tail ?? 0} in flight per run)` : `FAILED in ${bad} of ${bs.length} runs`
      ]
    }),
    new Set([2, 3, 4, 5, 6, 7])
  )
}

export function memoryTable (results: readonly MemoryResult[]): string {
  return table(
    ['target', 'streams ok', 'peak open (client/mock)', 'RSS before MiB', 'RSS peak MiB', 'RSS after MiB', 'KiB/stream (RSS)', 'KiB/stream (heap)', 'heap MiB before/after GC'],
    results.map((m) => [
      m.target,
      `${m.outcome.complete}/${m.streams}`,
      `${m.outcome.peakOpen}/${m.upstreamPeakActive}`,
      mib(m.before.rss),
      mib(m.peak.rss),
      mib(m.after.rss),
      m.rssKiBPerStream.toFixed(1),
      m.heapKiBPerStream.toFixed(1),
      `${mib(m.before.heapUsed)}/${mib(m.after.heapUsed)}`
    ]),
    new Set([1, 2, 3, 4, 5, 6, 7, 8])
  )
}
