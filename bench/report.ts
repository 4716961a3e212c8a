// Plain-text tables for the terminal and the JSON document written to bench/results/.
import type { CpuShare } from './cpu.js'
import type { LoadRun } from './load.js'
import type { MemoryResult } from './memory.js'

export interface MeasuredRun extends LoadRun {
  /** CPU use during the run, percent of one core; null where /proc is unavailable. */
  cpu: CpuShare | null
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
  /** Target CPU per request over the baseline's (above 1: the target costs more); null for the baseline. */
  cpuRatio: number | null
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

export function throughputTable (rows: readonly ThroughputRow[]): string {
  return table(
    ['scenario', 'target', 'req/s', 'p50 ms', 'p99 ms', 'MiB/s', 'CPU µs/req', 'other CPU%', 'req/s ratio', 'CPU/req ratio'],
    rows.map((r) => [
      r.workload,
      r.target,
      r.median.reqPerSec.toFixed(0),
      r.median.p50Ms.toFixed(1),
      r.median.p99Ms.toFixed(1),
      mib(r.median.bytesPerSec),
      pct(r.median.cpuUsPerRequest),
      pct(r.median.otherCpu),
      r.ratio === null ? '-' : r.ratio.toFixed(2) + (r.ratio < 0.7 ? ' (< 0.7)' : ''),
      r.cpuRatio === null || Number.isNaN(r.cpuRatio) ? '-' : r.cpuRatio.toFixed(2)
    ]),
    new Set([2, 3, 4, 5, 6, 7, 8, 9])
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
