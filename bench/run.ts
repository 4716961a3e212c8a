// npm run bench [-- --quick | --profile | --abort | --stalled | --scale | --latency] [--tsx]
//
// --scale runs only the scale scenario (bench/scale.ts): gateway-pg with one hot account, with
// 100 accounts, and two instances behind a round-robin balancer; --quick shortens it too.
// --latency runs only the one-connection latency scenario (bench/latency.ts).
//
// --abort runs only the client-abort scenario (bench/abort.ts: 2000 streams of 30 s aborted
// client-side, upstream streams counted 2.5 s later at the mock), about a minute per target.
//
// Process layout: the mock upstream, the bare proxy and each gateway target run in their own
// child process; autocannon and the memory test's client run here. Targets are measured
// alternately (bare, gateway-core, …, bare, gateway-core, …) in the same run and the median is
// reported. After each measured run of a billing target its child reports the ledger's charges,
// which must match the 2xx answers (bench/report.ts checkBilling); a mismatch fails the run.
import { execFileSync } from 'node:child_process'
import { mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { cpus } from 'node:os'
import { join } from 'node:path'
import { compileChildren, CORES, pinToCore, REPO_ROOT, type BenchChild } from './child-process.js'
import { ABORT, abortTable, runAbortTest, type AbortResult } from './abort.js'
import { runStalledTest, stalledTable, STALLED } from './stalled.js'
import { startCpuMeter } from './cpu.js'
import { describeFailures, failed, probeOnce, runLoad } from './load.js'
import { runMemoryTest, type MemoryResult } from './memory.js'
import { busiestProfile, formatFrames, selfTimes } from './profile.js'
import { billingTable, checkBilling, compareRows, comparisonTable, cpuPerRequestUs, median, memoryTable, pairedRatio, reqPerSecRange, throughputTable, type ComparisonRow, type MeasuredRun, type RunBilling, type ThroughputRow } from './report.js'
import { COMPARISONS, LOAD, MEMORY, SCENARIOS, type Workload } from './scenarios.js'
import { SCALE, SCALE_COMPARISONS, SCALE_TARGETS, scalePlan, scaleTarget } from './scale.js'
import { LATENCY, latencyTable, runLatency, type LatencyResult } from './latency.js'
import { BASELINE, gatewayTarget, startMock, TARGETS, targetNamed, type RunningTarget, type Target } from './targets.js'

const USAGE = 'usage: npm run bench [-- --quick | --profile | --abort | --stalled | --scale | --latency] [--tsx]'
const OPTIONS = new Set(['--quick', '--profile', '--tsx', '--abort', '--stalled', '--scale', '--latency'])
const RESULTS_DIR = join(REPO_ROOT, 'bench', 'results')

const args = process.argv.slice(2)
for (const a of args) {
  if (!OPTIONS.has(a)) {
    process.stderr.write(`unknown option ${a}\n${USAGE}\n`)
    process.exit(2)
  }
}
const quick = args.includes('--quick')
const profile = args.includes('--profile')
const abortOnly = args.includes('--abort')
const stalledOnly = args.includes('--stalled')
const scaleOnly = args.includes('--scale')
const latencyOnly = args.includes('--latency')
/** Children from source under tsx instead of compiled by tsc (see compileChildren). */
const tsx = args.includes('--tsx')
const timing = quick ? LOAD.quick : LOAD.full
const memoryTiming = quick ? MEMORY.quick : MEMORY.full

const log = (s: string): void => { process.stdout.write(s + '\n') }

function openFileLimit (): number {
  try {
    return Number(execFileSync('sh', ['-c', 'ulimit -n'], { encoding: 'utf8' }).trim())
  } catch {
    return Number.NaN
  }
}

interface Group {
  workload: Workload
  /** In measuring and table order, the baseline first. */
  targets: string[]
  /** Required ratio over the baseline per target, where the scenario names one. */
  goals: Map<string, number>
}

/**
 * BENCH_TARGETS=a,b: measure only these targets (and the baseline), without the memory test; a
 * diagnostic run (results go to bench/results/partial.json, not latest.json).
 */
const ONLY = (process.env.BENCH_TARGETS ?? '').split(',').map((t) => t.trim()).filter((t) => t !== '')
for (const t of ONLY) {
  if (!TARGETS.has(t)) {
    process.stderr.write(`BENCH_TARGETS: unknown target ${t}; known: ${[...TARGETS.keys()].join(', ')}\n`)
    process.exit(2)
  }
}

/** Workloads in table order, each with the targets its rows name (baseline first). */
function groups (): Group[] {
  const out: Group[] = []
  for (const s of SCENARIOS) {
    if (ONLY.length > 0 && !ONLY.includes(s.target)) continue
    let g = out.find((x) => x.workload === s.workload)
    if (!g) out.push(g = { workload: s.workload, targets: [BASELINE], goals: new Map() })
    if (!g.targets.includes(s.target)) g.targets.push(s.target)
    if (s.goal !== undefined) g.goals.set(s.target, s.goal)
  }
  return out
}

interface Started { running: RunningTarget, headers: Record<string, string>, keys?: readonly string[] | undefined }

/** Starts and prepares each target into `started`, so the caller can stop them even if one fails. */
async function startTargets (names: readonly string[], lookup: (name: string) => Target, env: Record<string, string>, started: Map<string, Started>): Promise<void> {
  for (const name of names) {
    const target = lookup(name)
    const running = await target.start(env)
    started.set(name, { running, headers: {} })
    if (target.prepare) {
      const prepared = await target.prepare(running)
      started.set(name, { running, headers: prepared.headers, keys: prepared.keys })
    }
  }
}

function billed (b: RunBilling | null): string {
  if (b === null) return ''
  return `  charges ${b.charges} / 2xx ${b.answered2xx}${b.problem === null ? '' : '  BILLING MISMATCH'}`
}

/** Measured runs whose machine had more than this much foreign CPU use (percent of a core) are flagged. */
const BUSY_MACHINE_PCT = 20

interface Measurement {
  plan: readonly Group[]
  lookup: (name: string) => Target
  connections: number
  timing: { durationS: number, warmupS: number, repetitions: number, firstWarmupS?: number }
}

/**
 * Each group's targets in alternating runs (warm-up, then measured with the CPU meter), the
 * billing targets checked against their ledger after each measured run; rows of medians.
 */
async function throughputPhase (m: Measurement, env: Record<string, string>, mock: BenchChild, failures: string[]): Promise<ThroughputRow[]> {
  const { plan, lookup, connections, timing } = m
  const names = [...new Set(plan.flatMap((g) => g.targets))]
  const started = new Map<string, Started>()
  const rows: ThroughputRow[] = []
  try {
    await startTargets(names, lookup, env, started)
    for (const [name, s] of started) log(`  ${name}: pid ${(s.running.pids ?? [s.running.pid]).join(', ')} ${s.running.url}  (${lookup(name).description})`)
    for (const { workload, targets, goals } of plan) {
      for (const name of targets) {
        const s = started.get(name)!
        const problem = await probeOnce({ url: s.running.url, workload, headers: s.headers })
        if (problem !== null) throw new Error(`${workload.name} through ${name}: ${problem}`)
      }
      const runs = new Map<string, MeasuredRun[]>(targets.map((t) => [t, []]))
      for (let rep = 1; rep <= timing.repetitions; rep++) {
        for (const name of targets) {
          const s = started.get(name)!
          const bills = lookup(name).bills === true
          const base = { url: s.running.url, workload, headers: s.headers, keys: s.keys, connections }
          const warm = await runLoad({ ...base, durationS: rep === 1 ? (timing.firstWarmupS ?? timing.warmupS) : timing.warmupS })
          if (failed(warm.failures)) failures.push(`${workload.name} / ${name} warm-up ${rep}: ${describeFailures(warm.failures)}`)
          // Waits until the warm-up's last requests are settled, so the run's charges are its own.
          const before = bills ? await s.running.child.report() : null
          const meter = startCpuMeter({ target: s.running.pids ?? s.running.pid, mock: mock.pid })
          const run: MeasuredRun = { ...await runLoad({ ...base, durationS: timing.durationS }), cpu: null, billing: null }
          run.cpu = meter.stop()
          if (failed(run.failures)) failures.push(`${workload.name} / ${name} run ${rep}: ${describeFailures(run.failures)}`)
          if (!s.running.child.isAlive()) throw new Error(`${name} exited during ${workload.name}`)
          if (bills) {
            const after = await s.running.child.report()
            if (before === null || after === null) throw new Error(`${name} bills but its child keeps no report`)
            run.billing = checkBilling(before, after, run.answered2xx, connections)
            if (run.billing.problem !== null) failures.push(`${workload.name} / ${name} run ${rep}: billing: ${run.billing.problem}`)
          }
          runs.get(name)!.push(run)
          const cpu = run.cpu === null ? '' : `  ${cpuPerRequestUs(run).toFixed(0)} µs CPU/req  CPU% target ${run.cpu.target.toFixed(0)} mock ${run.cpu.mock.toFixed(0)} bench ${run.cpu.bench.toFixed(0)} other ${run.cpu.other.toFixed(0)}`
          log(`  ${workload.name.padEnd(20)} ${name.padEnd(12)} #${rep}  ${run.reqPerSec.toFixed(0).padStart(7)} req/s  p50 ${run.p50Ms.toFixed(1)} ms  p99 ${run.p99Ms.toFixed(1)} ms${cpu}${billed(run.billing)}${failed(run.failures) ? '  FAILURES' : ''}`)
        }
      }
      const baseRuns = runs.get(BASELINE)!
      for (const name of targets) {
        const rs = runs.get(name)!
        const m = {
          reqPerSec: median(rs.map((r) => r.reqPerSec)),
          p50Ms: median(rs.map((r) => r.p50Ms)),
          p99Ms: median(rs.map((r) => r.p99Ms)),
          bytesPerSec: median(rs.map((r) => r.bytesPerSec)),
          targetCpu: median(rs.map((r) => r.cpu?.target ?? Number.NaN)),
          cpuUsPerRequest: median(rs.map(cpuPerRequestUs)),
          otherCpu: median(rs.map((r) => r.cpu?.other ?? Number.NaN))
        }
        const baseline = name === BASELINE
        rows.push({ workload: workload.name, target: name, runs: rs, median: m, ratio: baseline ? null : pairedRatio(rs, baseRuns, (r) => r.reqPerSec), ratioRange: baseline ? null : reqPerSecRange(rs, baseRuns), cpuRatio: baseline ? null : pairedRatio(rs, baseRuns, cpuPerRequestUs), goal: goals.get(name) ?? null })
      }
    }
  } finally {
    for (const s of started.values()) await s.running.stop()
  }
  return rows
}

async function memoryPhase (env: Record<string, string>, mock: BenchChild, failures: string[], warnings: string[]): Promise<MemoryResult[]> {
  const results: MemoryResult[] = []
  // Every stream needs its own upstream connection: the bare proxy's pool must hold them all
  // (the gateway's pool for the mock origin is the sum of gateway.yaml's providers, 3136).
  const memoryEnv = { ...env, BENCH_UPSTREAM_CONNECTIONS: String(Math.max(1024, MEMORY.streams * 2)) }
  for (const name of MEMORY.targets) {
    const m = await runMemoryTest({
      target: targetNamed(name),
      env: memoryEnv,
      mock,
      streams: MEMORY.streams,
      chunks: MEMORY.chunks,
      chunkDelayMs: memoryTiming.chunkDelayMs,
      rampMs: MEMORY.rampMs,
      sampleIntervalMs: MEMORY.sampleIntervalMs
    })
    log(`  ${name.padEnd(10)} ${m.outcome.complete}/${m.streams} complete in ${(m.outcome.wallMs / 1000).toFixed(1)} s, peak RSS +${((m.peak.rss - m.before.rss) / 1024 / 1024).toFixed(1)} MiB`)
    if (m.outcome.failed > 0) failures.push(`memory / ${name}: ${m.outcome.failed} of ${m.streams} streams failed: ${m.outcome.failures.join('; ')}`)
    // A busy machine may not hold them all open at once: say so, the figure is per open stream.
    if (m.outcome.peakOpen < m.streams) warnings.push(`memory / ${name}: only ${m.outcome.peakOpen} of ${m.streams} streams were open at once; KiB/stream is per open stream`)
    results.push(m)
  }
  return results
}

/** The target `--profile` runs under --cpu-prof: BENCH_PROFILE_TARGET, else the full gateway (embedded). */
const PROFILE_TARGET = process.env.BENCH_PROFILE_TARGET ?? gatewayTarget.name

async function profilePhase (env: Record<string, string>): Promise<void> {
  const dir = join(RESULTS_DIR, 'profiles')
  rmSync(dir, { recursive: true, force: true })
  mkdirSync(dir, { recursive: true })
  const target = targetNamed(PROFILE_TARGET)
  const running = await target.start(env, { execArgv: ['--cpu-prof', `--cpu-prof-dir=${dir}`] })
  try {
    const prepared = target.prepare ? await target.prepare(running) : { headers: {} }
    for (const { workload } of groups()) {
      const run = await runLoad({ url: running.url, workload, headers: prepared.headers, keys: prepared.keys, connections: LOAD.connections, durationS: timing.firstWarmupS + timing.durationS })
      log(`  ${workload.name.padEnd(20)} ${PROFILE_TARGET} (profiled)  ${run.reqPerSec.toFixed(0)} req/s${failed(run.failures) ? '  ' + describeFailures(run.failures) : ''}`)
    }
  } finally {
    await running.stop()
  }
  const file = busiestProfile(dir)
  if (file === undefined) throw new Error(`no .cpuprofile written to ${dir}`)
  log(`\nprofile: ${file}`)
  log('\nTop self time inside gateway code (plugins/):')
  log(formatFrames(selfTimes(file, '/plugins/'), 10))
  log('\nTop self time overall:')
  log(formatFrames(selfTimes(file), 15))
}

/** The client-abort scenario alone (--abort): its table, and bench/results/abort.json. */
async function abortPhase (env: Record<string, string>, mock: BenchChild): Promise<number> {
  const results: AbortResult[] = []
  const abortEnv = { ...env, BENCH_UPSTREAM_CONNECTIONS: String(ABORT.streams * 2) }
  try {
    for (const name of ABORT.targets) {
      const r = await runAbortTest({ target: targetNamed(name), env: abortEnv, mock, streams: ABORT.streams })
      log(`  ${name.padEnd(10)} ${r.started}/${r.streams} started, upstream open: ${r.upstreamOpenBefore} before, ${r.upstreamOpenAfter} ${r.afterMs} ms after the abort${r.failures.length > 0 ? '  failures: ' + r.failures.join('; ') : ''}`)
      results.push(r)
    }
  } finally {
    await mock.stop()
  }
  log('\n' + abortTable(results))
  mkdirSync(RESULTS_DIR, { recursive: true })
  writeFileSync(join(RESULTS_DIR, 'abort.json'), JSON.stringify({ finishedAt: new Date().toISOString(), settings: ABORT, results }, null, 2) + '\n')
  return results.some((r) => r.failures.length > 0) ? 1 : 0
}

/** The scale scenario alone (--scale): its tables, and bench/results/scale.json. */
async function scalePhase (env: Record<string, string>, mock: BenchChild): Promise<number> {
  const failures: string[] = []
  const scaleTiming = quick ? SCALE.quick : SCALE.full
  log(`\nscale: ${SCALE.connections} connections, ${scaleTiming.warmupS} s warm-up + ${scaleTiming.durationS} s measured, ${scaleTiming.repetitions} alternating run(s) per target (median)`)
  let rows: ThroughputRow[] = []
  try {
    rows = await throughputPhase({ plan: scalePlan(), lookup: scaleTarget, connections: SCALE.connections, timing: scaleTiming }, env, mock, failures)
  } catch (err) {
    failures.push(err instanceof Error ? err.message : String(err))
  } finally {
    await mock.stop()
  }
  const comparisons = SCALE_COMPARISONS.flatMap((c) => compareRows(rows, c))
  if (rows.length > 0) log('\n' + throughputTable(rows))
  if (comparisons.length > 0) log('\n' + comparisonTable(comparisons))
  if (rows.length > 0) log('\nbilling check (measured runs; every 2xx answer charged once)\n' + billingTable(rows))
  mkdirSync(RESULTS_DIR, { recursive: true })
  const file = join(RESULTS_DIR, 'scale.json')
  writeFileSync(file, JSON.stringify({ finishedAt: new Date().toISOString(), quick, settings: { connections: SCALE.connections, ...scaleTiming }, throughput: rows, comparisons, failures }, null, 2) + '\n')
  log(`\nresults: ${file}`)
  for (const f of failures) log(`FAILED: ${f}`)
  return failures.length > 0 ? 1 : 0
}

/** The one-connection latency scenario alone (--latency): its table, and bench/results/latency.json. */
async function latencyPhase (env: Record<string, string>, mock: BenchChild): Promise<number> {
  const latencyTiming = quick ? LATENCY.quick : LATENCY.full
  log(`\nlatency: 1 connection, requests one after another, ${latencyTiming.warmupS} s warm-up + ${latencyTiming.durationS} s measured per target and workload, in ${latencyTiming.slices} alternating slices`)
  let results: LatencyResult[] = []
  const failures: string[] = []
  try {
    results = await runLatency(env, latencyTiming, (name) => SCALE_TARGETS.get(name) ?? targetNamed(name), log)
  } catch (err) {
    failures.push(err instanceof Error ? err.message : String(err))
  } finally {
    await mock.stop()
  }
  for (const r of results) failures.push(...r.failures.map((f) => `${r.workload} / ${r.target}: ${f}`))
  if (results.length > 0) log('\n' + latencyTable(results))
  mkdirSync(RESULTS_DIR, { recursive: true })
  const file = join(RESULTS_DIR, 'latency.json')
  writeFileSync(file, JSON.stringify({ finishedAt: new Date().toISOString(), quick, settings: latencyTiming, results, failures }, null, 2) + '\n')
  log(`\nresults: ${file}`)
  for (const f of failures) log(`FAILED: ${f}`)
  return failures.length > 0 ? 1 : 0
}

async function main (): Promise<number> {
  const nofile = openFileLimit()
  log(`model-gateway bench${quick ? ' --quick' : ''}${profile ? ' --profile' : ''}${tsx ? ' --tsx' : ''}: node ${process.version}, ${cpus().length} cores, ulimit -n ${nofile}`)
  const mainRun = !profile && !scaleOnly && !latencyOnly
  if (mainRun && ONLY.length > 0) log(`targets: ${ONLY.join(', ')} and the baseline only (BENCH_TARGETS); no memory test`)
  if (mainRun) log(`load: autocannon, ${LOAD.connections} connections, ${timing.repetitions} round(s), each target in turn: ${timing.warmupS} s warm-up (${timing.firstWarmupS} s in the first round) + ${timing.durationS} s measured; medians, ratio to bare = median of per-round ratios`)
  // Each child holds up to 2 sockets per stream in the memory test.
  if (mainRun && nofile < Math.max(MEMORY.streams, ABORT.streams) * 2 + 256) {
    process.stderr.write(`ulimit -n ${nofile} is too low for ${MEMORY.streams} streams; run \`ulimit -n 65536\` first\n`)
    return 1
  }
  const pinned = pinToCore(process.pid, CORES.load)
  log(pinned
    ? `cores: each target alone on core ${CORES.target}; the mock and autocannon (this process) on core ${CORES.load} (taskset)`
    : 'cores: not pinned (one core, or no taskset): targets, mock and load share the machine')
  if (!tsx) compileChildren()
  log(`children: ${tsx ? 'from source under tsx' : 'compiled by tsc (tsconfig.bench.json), plain node'}`)
  const mock = await startMock()
  const env = { BENCH_UPSTREAM_URL: mock.url }
  log(`  mock upstream: pid ${mock.pid} ${mock.url}`)
  const failures: string[] = []
  const warnings: string[] = []
  const startedAt = new Date()
  let rows: ThroughputRow[] = []
  let comparisons: ComparisonRow[] = []
  let memory: MemoryResult[] = []
  if (stalledOnly) {
    log(`\none of two pool members stalled: gateway (embedded), first-byte timeout ${STALLED.timeoutMs} ms`)
    try {
      const r = await runStalledTest(gatewayTarget, env)
      log('\n' + stalledTable(r))
      mkdirSync(RESULTS_DIR, { recursive: true })
      writeFileSync(join(RESULTS_DIR, 'stalled.json'), JSON.stringify({ finishedAt: new Date().toISOString(), settings: STALLED, result: r }, null, 2) + '\n')
      for (const f of r.failures) log(`FAILED: ${f}`)
      return r.failures.length > 0 ? 1 : 0
    } finally {
      await mock.stop()
    }
  }
  if (scaleOnly) return await scalePhase(env, mock)
  if (latencyOnly) return await latencyPhase(env, mock)
  if (abortOnly) {
    log(`\nclient aborts: ${ABORT.streams} streams of ${ABORT.chunks * ABORT.chunkDelayMs / 1000} s per target, counted ${ABORT.afterMs} ms after the abort`)
    return await abortPhase(env, mock)
  }
  if (profile) {
    // A diagnostic, not a measurement: nothing is written to bench/results/latest.json.
    try {
      await profilePhase(env)
      return 0
    } catch (err) {
      log(`\nFAILED: ${err instanceof Error ? err.message : String(err)}`)
      return 1
    } finally {
      await mock.stop()
    }
  }
  try {
    log('\nthroughput')
    rows = await throughputPhase({ plan: groups(), lookup: targetNamed, connections: LOAD.connections, timing }, env, mock, failures)
    if (ONLY.length === 0) {
      log(`\nmemory: ${MEMORY.streams} concurrent streams, ${MEMORY.chunks} chunks every ${memoryTiming.chunkDelayMs} ms`)
      memory = await memoryPhase(env, mock, failures, warnings)
    }
  } catch (err) {
    failures.push(err instanceof Error ? err.message : String(err))
  } finally {
    await mock.stop()
  }

  comparisons = COMPARISONS.flatMap((c) => compareRows(rows, c))
  if (rows.length > 0) log('\n' + throughputTable(rows))
  if (comparisons.length > 0) log('\n' + comparisonTable(comparisons))
  if (rows.some((r) => r.runs.some((run) => run.billing !== null))) log('\nbilling check (measured runs; every 2xx answer charged once)\n' + billingTable(rows))
  if (memory.length > 0) log('\n' + memoryTable(memory))
  const busiest = Math.max(...rows.map((r) => r.median.otherCpu).filter((x) => !Number.isNaN(x)))
  if (busiest > BUSY_MACHINE_PCT) warnings.push(`other processes used up to ${busiest.toFixed(0)}% of a core during measured runs; figures are noisy`)
  for (const w of warnings) log(`\nwarning: ${w}`)
  mkdirSync(RESULTS_DIR, { recursive: true })
  const file = join(RESULTS_DIR, ONLY.length > 0 ? 'partial.json' : 'latest.json')
  writeFileSync(file, JSON.stringify({
    startedAt: startedAt.toISOString(),
    finishedAt: new Date().toISOString(),
    quick,
    children: tsx ? 'tsx' : 'compiled',
    node: process.version,
    cores: cpus().length,
    openFileLimit: nofile,
    load: { connections: LOAD.connections, ...timing },
    memorySettings: { streams: MEMORY.streams, chunks: MEMORY.chunks, sampleIntervalMs: MEMORY.sampleIntervalMs, ...memoryTiming },
    throughput: rows,
    comparisons,
    memory,
    warnings,
    failures
  }, null, 2) + '\n')
  log(`\nresults: ${file}`)
  if (failures.length > 0) {
    log(`\nFAILED: ${failures.length} problem(s); these figures are not valid:`)
    for (const f of failures) log(`  - ${f}`)
    return 1
  }
  return 0
}

// Exit explicitly: a child that failed to stop must not keep the benchmark alive.
process.exit(await main())
