// One of two pool members stalled (issue 14): the full gateway (embedded) with the openai pool
// of two equal members, the mock and a server that accepts connections and never answers
// (first-byte timeout STALLED.timeoutMs). The same load runs through the gateway with its
// normal one-member pool, then through the gateway with the stalled member; the figure is p99
// latency with the stalled member over p99 without (goal ≤ 2) and every request answered 2xx.
// A request that picks the stalled member waits the timeout and is retried on the other; after
// `upstream.breaker_failures` such failures the member's circuit opens and it is skipped until
// each cool-down's single probe. Run with `npm run bench -- --stalled`.
import { createServer, type Server, type Socket } from 'node:net'
import { runLoad, type LoadRun } from './load.js'
import { WORKLOADS } from './scenarios.js'
import type { Target, TargetEnv } from './targets.js'

export const STALLED = {
  timeoutMs: 1000,
  connections: 50,
  warmupS: 2,
  durationS: 10,
  goal: 2
} as const

export interface StalledResult {
  normal: { reqPerSec: number, p50Ms: number, p99Ms: number, requests: number, non2xx: number }
  stalled: { reqPerSec: number, p50Ms: number, p99Ms: number, requests: number, non2xx: number }
  /** Connections the stalled server accepted (each one a request that waited for the timeout or its retry). */
  stalledConnections: number
  p99Ratio: number
  failures: string[]
}

/** A TCP server that accepts connections, reads what comes and never answers. */
async function stalledServer (): Promise<{ url: string, accepted: () => number, close: () => Promise<void> }> {
  const sockets = new Set<Socket>()
  let accepted = 0
  const server: Server = createServer((s) => {
    accepted++
    sockets.add(s)
    s.on('data', () => {})
    s.on('error', () => {})
    s.on('close', () => { sockets.delete(s) })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const address = server.address()
  if (address === null || typeof address === 'string') throw new Error('stalled server did not bind')
  return {
    url: `http://127.0.0.1:${address.port}`,
    accepted: () => accepted,
    async close () {
      for (const s of sockets) s.destroy()
      await new Promise<void>((resolve) => server.close(() => { resolve() }))
    }
  }
}

function summary (r: LoadRun): StalledResult['normal'] {
  return { reqPerSec: r.reqPerSec, p50Ms: r.p50Ms, p99Ms: r.p99Ms, requests: r.requests, non2xx: r.requests - r.answered2xx }
}

async function measure (target: Target, env: TargetEnv): Promise<LoadRun> {
  const running = await target.start(env)
  try {
    const base = { url: running.url, workload: WORKLOADS.chat, headers: {}, connections: STALLED.connections }
    await runLoad({ ...base, durationS: STALLED.warmupS })
    return await runLoad({ ...base, durationS: STALLED.durationS })
  } finally {
    await running.stop()
  }
}

export async function runStalledTest (target: Target, env: TargetEnv): Promise<StalledResult> {
  const failures: string[] = []
  const normal = await measure(target, env)
  const stalled = await stalledServer()
  let withStalled: LoadRun
  try {
    withStalled = await measure(target, { ...env, BENCH_STALLED_URL: stalled.url, BENCH_STALLED_TIMEOUT_MS: String(STALLED.timeoutMs) })
  } finally {
    await stalled.close()
  }
  const result: StalledResult = {
    normal: summary(normal),
    stalled: summary(withStalled),
    stalledConnections: stalled.accepted(),
    p99Ratio: withStalled.p99Ms / normal.p99Ms,
    failures
  }
  if (result.stalled.non2xx > 0 || withStalled.failures.errors > 0 || withStalled.failures.timeouts > 0) {
    failures.push(`with a stalled member: ${result.stalled.non2xx} non-2xx, ${withStalled.failures.errors} errors, ${withStalled.failures.timeouts} timeouts of ${result.stalled.requests}`)
  }
  if (stalled.accepted() === 0) failures.push('the stalled member was never tried: the scenario measured nothing')
  return result
}

export function stalledTable (r: StalledResult): string {
  const row = (name: string, s: StalledResult['normal']): string =>
    `${name.padEnd(34)}${s.reqPerSec.toFixed(0).padStart(8)}${s.p50Ms.toFixed(1).padStart(8)}${s.p99Ms.toFixed(1).padStart(8)}${String(s.requests).padStart(9)}${String(s.non2xx).padStart(8)}`
  return [
    `one of two pool members stalled (first-byte timeout ${STALLED.timeoutMs} ms), chat JSON, ${STALLED.connections} connections, ${STALLED.durationS} s`,
    `${'gateway (embedded)'.padEnd(34)}${'req/s'.padStart(8)}${'p50 ms'.padStart(8)}${'p99 ms'.padStart(8)}${'requests'.padStart(9)}${'non-2xx'.padStart(8)}`,
    row('one member (normal)', r.normal),
    row('two members, one stalled', r.stalled),
    `p99 with the stalled member / normal: ${r.p99Ratio.toFixed(2)} (goal ≤ ${STALLED.goal}); connections the stalled member accepted: ${r.stalledConnections}`
  ].join('\n')
}
