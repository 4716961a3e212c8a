// Parent side of the bench protocol: fork a child, wait for its URL, sample its memory.
// Children run compiled by tsc, as `npm start` runs the gateway (compileChildren), or from
// source under tsx.
import { execFileSync, fork, type ChildProcess } from 'node:child_process'
import { cpus } from 'node:os'
import { rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { isFromChild, type ChildReport, type FromChild, type MemorySample, type ToChild } from './ipc.js'

export const REPO_ROOT = fileURLToPath(new URL('..', import.meta.url))

/** Output of tsconfig.bench.json: the children, the plugins and the test fixtures they import. */
export const BUILD_DIR = join(REPO_ROOT, '.bench-build')

let compiled = false

/**
 * Compiles the children with tsc (tsconfig.bench.json, into BUILD_DIR, afresh) and runs every
 * child forked from now on from there with plain node, as production runs dist/. Without it
 * children run from source under tsx, whose esbuild output wraps every function in a `__name`
 * call, each time a closure is created: work production does not do.
 */
export function compileChildren (): void {
  rmSync(BUILD_DIR, { recursive: true, force: true })
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc')
  execFileSync(process.execPath, [tsc, '-p', join(REPO_ROOT, 'tsconfig.bench.json')], { cwd: REPO_ROOT, stdio: 'inherit' })
  compiled = true
}

/** The entry, node flags and environment a child runs with. */
function childRuntime (entry: URL): { file: string, execArgv: string[], env: Record<string, string> } {
  const source = fileURLToPath(entry)
  if (!compiled) return { file: source, execArgv: ['--import', 'tsx'], env: {} }
  // Compiled modules sit one directory deeper: the repository's config is named for them.
  const config = process.env.BENCH_GATEWAY_CONFIG ?? join(REPO_ROOT, 'gateway.yaml')
  return { file: join(BUILD_DIR, relative(REPO_ROOT, source)).replace(/\.ts$/, '.js'), execArgv: [], env: { BENCH_GATEWAY_CONFIG: config } }
}

/**
 * The process layout on a machine with two cores or more: the target measured (bare proxy or a
 * gateway) alone on one core, the mock provider and the load generator (this process) on
 * another, so the two do not take each other's CPU in the middle of a run.
 */
export const CORES = { target: 0, load: 1 } as const

/**
 * Pins every thread of a process to one core with taskset (threads it starts later inherit the
 * mask). False where it cannot (one core, or no taskset): the run goes on unpinned and says so.
 */
export function pinToCore (pid: number, core: number): boolean {
  if (cpus().length < 2) return false
  try {
    execFileSync('taskset', ['-a', '-p', '-c', String(core), String(pid)], { stdio: 'ignore' })
    return true
  } catch {
    return false
  }
}

export interface ForkOptions {
  /** Label in messages. */
  name: string
  /** Source module under bench/children/ (see compileChildren for how it runs). */
  entry: URL
  env: Readonly<Record<string, string>>
  /** Node flags added after `--expose-gc` (e.g. --cpu-prof). */
  execArgv?: readonly string[]
  startTimeoutMs?: number
  /** Core to pin the child to (see CORES). */
  core?: number
  /** Runs the child with this program instead of node (given node's arguments): a wrapper such as valgrind. */
  execPath?: string
}

export interface BenchChild {
  readonly name: string
  readonly pid: number
  readonly url: string
  /** Resolves with the exit code once the child is gone, however it ended. */
  readonly exited: Promise<number | null>
  isAlive (): boolean
  /** Calls `onSample` with a memory sample every `intervalMs` until `stopSampling`. */
  startSampling (intervalMs: number, onSample: (s: MemorySample) => void): void
  stopSampling (): void
  snapshot (gc: boolean): Promise<MemorySample>
  /** The child's report (waits until it is quiet); null when the child keeps none. */
  report (): Promise<ChildReport | null>
  stop (): Promise<void>
}

export async function forkChild (opts: ForkOptions): Promise<BenchChild> {
  const runtime = childRuntime(opts.entry)
  const child: ChildProcess = fork(runtime.file, [], {
    cwd: REPO_ROOT,
    env: { ...process.env, ...runtime.env, ...opts.env },
    execArgv: [...runtime.execArgv, '--expose-gc', ...(opts.execArgv ?? [])],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    ...(opts.execPath !== undefined ? { execPath: opts.execPath } : {})
  })
  const pid = child.pid
  if (pid === undefined) throw new Error(`${opts.name}: fork failed`)
  if (opts.core !== undefined) pinToCore(pid, opts.core)
  let alive = true
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => { alive = false; resolve(code) }))
  const send = (m: ToChild): void => { if (alive && child.connected) child.send(m) }

  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(new Error(`${opts.name}: not ready after ${opts.startTimeoutMs ?? 30_000} ms`))
    }, opts.startTimeoutMs ?? 30_000)
    const onMessage = (m: unknown): void => {
      if (!isFromChild(m)) return
      if (m.type === 'ready') { cleanup(); resolve(m.url) }
      if (m.type === 'failed') { cleanup(); reject(new Error(`${opts.name} failed to start:\n${m.message}`)) }
    }
    const onExit = (code: number | null): void => { cleanup(); reject(new Error(`${opts.name} exited (code ${code}) before it was ready`)) }
    const cleanup = (): void => {
      clearTimeout(timer)
      child.off('message', onMessage)
      child.off('exit', onExit)
    }
    child.on('message', onMessage)
    child.once('exit', onExit)
  })

  let sampleHandler: ((s: MemorySample) => void) | undefined
  let nextId = 1
  const waiting = new Map<number, (s: MemorySample) => void>()
  const reports = new Map<number, { resolve: (r: ChildReport | null) => void, reject: (err: Error) => void }>()
  child.on('message', (m: unknown) => {
    if (!isFromChild(m)) return
    const msg: FromChild = m
    if (msg.type === 'sample') sampleHandler?.(msg.sample)
    if (msg.type === 'snapshot') {
      waiting.get(msg.id)?.(msg.sample)
      waiting.delete(msg.id)
    }
    if (msg.type === 'report') {
      const w = reports.get(msg.id)
      reports.delete(msg.id)
      if (msg.error !== undefined) w?.reject(new Error(`${opts.name}: report failed: ${msg.error}`))
      else w?.resolve(msg.report)
    }
  })

  return {
    name: opts.name,
    pid,
    url,
    exited,
    isAlive: () => alive,
    startSampling (intervalMs, onSample) {
      sampleHandler = onSample
      send({ type: 'sample', intervalMs })
    },
    stopSampling () {
      send({ type: 'sample-stop' })
      sampleHandler = undefined
    },
    snapshot (gc) {
      const id = nextId++
      return new Promise<MemorySample>((resolve, reject) => {
        if (!alive) { reject(new Error(`${opts.name} is not running`)); return }
        waiting.set(id, resolve)
        send({ type: 'snapshot', id, gc })
        exited.then(() => reject(new Error(`${opts.name} exited during a snapshot`)), () => {})
      })
    },
    report () {
      const id = nextId++
      return new Promise<ChildReport | null>((resolve, reject) => {
        if (!alive) { reject(new Error(`${opts.name} is not running`)); return }
        reports.set(id, { resolve, reject })
        send({ type: 'report', id })
        exited.then(() => reject(new Error(`${opts.name} exited during a report`)), () => {})
      })
    },
    async stop () {
      if (!alive) return
      send({ type: 'stop' })
      // --cpu-prof writes its profile on exit; give it time before forcing.
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000)
      await exited
      clearTimeout(timer)
    }
  }
}
