// Client aborts (issue 14): open N streams of `durationS` through a target, let every one
// receive its first chunk, abort them all client-side at once, and count the upstream streams
// still open at the mock `afterMs` later. The bare proxy closes its upstream requests with
// their clients; the gateway must too (providers' default: no drain on disconnect). Run with
// `npm run bench -- --abort` (or `npm run bench:abort`); the default bench does not run it.
import { setMaxListeners } from 'node:events'
import { setTimeout as sleep } from 'node:timers/promises'
import { Pool } from 'undici'
import type { BenchChild } from './child-process.js'
import { WORKLOADS } from './scenarios.js'
import type { Target, TargetEnv } from './targets.js'

export const ABORT = {
  streams: 2000,
  /** Each stream would last chunks × chunkDelayMs (30 s) if nobody left. */
  chunks: 300,
  chunkDelayMs: 100,
  /** When the upstream streams are counted after the abort. */
  afterMs: 2500,
  rampMs: 2000,
  targets: ['bare', 'gateway']
} as const

export interface AbortResult {
  target: string
  streams: number
  /** Streams whose first chunk reached the client before the abort. */
  started: number
  /** Requests in flight at the mock just before the abort. */
  upstreamOpenBefore: number
  /** Requests in flight at the mock `afterMs` after the abort: the figure of the issue (0 expected). */
  upstreamOpenAfter: number
  afterMs: number
  /** Requests in flight at the mock 10 s after the abort (a drain would still show here). */
  upstreamOpenLate: number
  failures: string[]
}

export interface AbortOptions {
  target: Target
  env: TargetEnv
  mock: BenchChild
  streams: number
}

export async function runAbortTest (o: AbortOptions): Promise<AbortResult> {
  const running = await o.target.start(o.env)
  const failures: string[] = []
  try {
    const { headers } = o.target.prepare ? await o.target.prepare(running) : { headers: {} }
    const w = WORKLOADS.chatStream
    const pool = new Pool(running.url, { connections: o.streams, pipelining: 1 })
    const controller = new AbortController()
    setMaxListeners(o.streams + 16, controller.signal) // one abort listener per request, by design
    let started = 0
    let allStarted: () => void = () => {}
    const everyoneStarted = new Promise<void>((resolve) => { allStarted = resolve })
    const one = async (): Promise<void> => {
      try {
        const res = await pool.request({
          method: w.method,
          path: w.path,
          headers: { ...w.headers, ...headers, 'x-mock-chunks': String(ABORT.chunks), 'x-mock-chunk-delay-ms': String(ABORT.chunkDelayMs) },
          body: w.body,
          signal: controller.signal
        })
        let first = true
        for await (const part of res.body as AsyncIterable<Buffer>) {
          if (first && part.length > 0) {
            first = false
            if (++started === o.streams) allStarted()
          }
        }
      } catch (err) {
        if (!controller.signal.aborted && failures.length < 5) failures.push(err instanceof Error ? `${err.name}: ${err.message}` : String(err))
      }
    }
    const pending: Array<Promise<void>> = []
    const batches = Math.ceil(o.streams / 100)
    for (let b = 0; b < batches; b++) {
      if (b > 0) await sleep(ABORT.rampMs / batches)
      for (let i = b * 100; i < Math.min(o.streams, (b + 1) * 100); i++) pending.push(one())
    }
    // Every stream started (or a bound: a busy machine may not start them all).
    await Promise.race([everyoneStarted, sleep(ABORT.rampMs + 20_000)])
    const before = (await o.mock.snapshot(false)).probe.activeRequests ?? Number.NaN
    controller.abort()
    await Promise.all(pending)
    await sleep(ABORT.afterMs)
    const after = (await o.mock.snapshot(false)).probe.activeRequests ?? Number.NaN
    await sleep(Math.max(0, 10_000 - ABORT.afterMs))
    const late = (await o.mock.snapshot(false)).probe.activeRequests ?? Number.NaN
    await pool.destroy()
    return {
      target: o.target.name,
      streams: o.streams,
      started,
      upstreamOpenBefore: before,
      upstreamOpenAfter: after,
      afterMs: ABORT.afterMs,
      upstreamOpenLate: late,
      failures
    }
  } finally {
    await running.stop()
  }
}

export function abortTable (results: readonly AbortResult[]): string {
  const lines = [
    `client aborts: ${ABORT.streams} streams of ${(ABORT.chunks * ABORT.chunkDelayMs / 1000).toFixed(0)} s aborted by their clients`,
    'target      started  upstream open before  open after 2.5 s  open after 10 s'
  ]
  for (const r of results) {
    lines.push(`${r.target.padEnd(12)}${String(r.started).padStart(7)}${String(r.upstreamOpenBefore).padStart(22)}${String(r.upstreamOpenAfter).padStart(18)}${String(r.upstreamOpenLate).padStart(17)}`)
  }
  return lines.join('\n')
}
