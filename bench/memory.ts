// Memory per open stream: hold N slow streams open through a target at once and sample the
// target child's memory every sampleIntervalMs (before after GC, peak, after after GC).
import { setMaxListeners } from 'node:events'
import { setTimeout as sleep } from 'node:timers/promises'
import { Pool } from 'undici'
import type { BenchChild } from './child-process.js'
import type { MemorySample } from './ipc.js'
import { completeChatStream, WORKLOADS } from './scenarios.js'
import type { Target, TargetEnv } from './targets.js'

export interface StreamsOutcome {
  /** 2xx answers with every content chunk and the terminator. */
  complete: number
  failed: number
  /** First few failure descriptions. */
  failures: string[]
  /** Most streams the client had open (headers received, body not finished) at once. */
  peakOpen: number
  wallMs: number
}

export interface MemoryResult {
  target: string
  streams: number
  chunks: number
  chunkDelayMs: number
  rampMs: number
  outcome: StreamsOutcome
  /** Most requests in flight at the mock upstream at once (proves the streams overlapped). */
  upstreamPeakActive: number
  before: MemorySample
  peak: { rss: number, heapUsed: number }
  after: MemorySample
  /** Peak RSS growth over the streams open at once (outcome.peakOpen). */
  rssKiBPerStream: number
  heapKiBPerStream: number
}

export interface MemoryOptions {
  target: Target
  env: TargetEnv
  mock: BenchChild
  streams: number
  chunks: number
  chunkDelayMs: number
  rampMs: number
  sampleIntervalMs: number
}

/** Requests are started in batches of this size, spread over the ramp. */
const RAMP_BATCH = 100

/**
 * Opens `n` streaming chat requests over `rampMs` and reads each to its end. The ramp keeps
 * 2000 handshakes from landing in the same millisecond (a burst measures the accept queue,
 * not the memory of open streams); the streams outlast it, so all are open at once.
 */
export async function openStreams (url: string, headers: Record<string, string>, n: number, chunks: number, chunkDelayMs: number, rampMs = 0): Promise<StreamsOutcome> {
  const w = WORKLOADS.chatStream
  const pool = new Pool(url, { connections: n, pipelining: 1 })
  const signal = AbortSignal.timeout(60_000 + chunks * chunkDelayMs * 2)
  setMaxListeners(n + 16, signal) // one abort listener per request, by design
  const failures: string[] = []
  let complete = 0
  let open = 0
  let peakOpen = 0
  const started = Date.now()
  const one = async (): Promise<void> => {
    try {
      const res = await pool.request({
        method: w.method,
        path: w.path,
        headers: { ...w.headers, ...headers, 'x-mock-chunks': String(chunks), 'x-mock-chunk-delay-ms': String(chunkDelayMs) },
        body: w.body,
        signal
      })
      open++
      peakOpen = Math.max(peakOpen, open)
      let text = ''
      try {
        res.body.setEncoding('utf8')
        for await (const part of res.body) text += part as string
      } finally {
        open--
      }
      if (res.statusCode < 200 || res.statusCode >= 300) failures.push(`status ${res.statusCode}: ${text.slice(0, 200)}`)
      else if (!completeChatStream(text, chunks)) failures.push(`incomplete stream (${text.length} bytes)`)
      else complete++
    } catch (err) {
      failures.push(err instanceof Error ? `${err.name}: ${err.message}` : String(err))
    }
  }
  const pending: Array<Promise<void>> = []
  const batches = Math.ceil(n / RAMP_BATCH)
  for (let b = 0; b < batches; b++) {
    if (b > 0 && rampMs > 0) await sleep(rampMs / batches)
    for (let i = b * RAMP_BATCH; i < Math.min(n, (b + 1) * RAMP_BATCH); i++) pending.push(one())
  }
  await Promise.all(pending)
  await pool.close()
  return { complete, failed: failures.length, failures: failures.slice(0, 5), peakOpen, wallMs: Date.now() - started }
}

export async function runMemoryTest (o: MemoryOptions): Promise<MemoryResult> {
  const running = await o.target.start(o.env)
  try {
    const { headers } = o.target.prepare ? await o.target.prepare(running) : { headers: {} }
    // Warm-up: compiled code and the pools' first sockets are not per-stream costs.
    for (let i = 0; i < 3; i++) await openStreams(running.url, headers, 200, o.chunks, 0)
    await sleep(500)
    const before = await running.child.snapshot(true)

    const peak = { rss: before.rss, heapUsed: before.heapUsed }
    let upstreamPeakActive = 0
    running.child.startSampling(o.sampleIntervalMs, (s) => {
      peak.rss = Math.max(peak.rss, s.rss)
      peak.heapUsed = Math.max(peak.heapUsed, s.heapUsed)
    })
    o.mock.startSampling(o.sampleIntervalMs, (s) => {
      upstreamPeakActive = Math.max(upstreamPeakActive, s.probe.activeRequests ?? 0)
    })
    const outcome = await openStreams(running.url, headers, o.streams, o.chunks, o.chunkDelayMs, o.rampMs)
    running.child.stopSampling()
    o.mock.stopSampling()

    await sleep(1000)
    const after = await running.child.snapshot(true)
    return {
      target: o.target.name,
      streams: o.streams,
      chunks: o.chunks,
      chunkDelayMs: o.chunkDelayMs,
      rampMs: o.rampMs,
      outcome,
      upstreamPeakActive,
      before,
      peak,
      after,
      // Per stream that was open at the peak: all of them unless the machine could not keep up.
      rssKiBPerStream: (peak.rss - before.rss) / Math.max(1, outcome.peakOpen) / 1024,
      heapKiBPerStream: (peak.heapUsed - before.heapUsed) / Math.max(1, outcome.peakOpen) / 1024
    }
  } finally {
    await running.stop()
  }
}
