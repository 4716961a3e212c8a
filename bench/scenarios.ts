// The scenario table. A workload is one request shape; a scenario row measures one target on
// one workload against the bare proxy (BASELINE) on the same workload, in alternating runs.
// Comparisons divide two rows of the same workload (e.g. the cost of the auth stages).
import { BENCH_KEY } from './children/seed.js'

export interface Workload {
  readonly name: string
  readonly method: 'POST'
  readonly path: string
  readonly headers: Readonly<Record<string, string>>
  readonly body: string
  /** False for a 2xx answer that is not the whole expected response (counted as a failure). */
  verify (body: string): boolean
}

export interface Scenario {
  readonly workload: Workload
  /** A name in TARGETS (targets.ts). */
  readonly target: string
  /** Required req/s ratio over the baseline; a lower one is flagged in the table (not a failure). */
  readonly goal?: number
}

/** req/s of `target` over `over` on every workload that has both rows. */
export interface Comparison {
  readonly label: string
  readonly target: string
  readonly over: string
  /** Required ratio; a lower one is flagged (not a failure). */
  readonly goal?: number
}

export const STREAM_CHUNKS = 20

export function countOf (text: string, needle: string): number {
  let n = 0
  for (let i = text.indexOf(needle); i !== -1; i = text.indexOf(needle, i + needle.length)) n++
  return n
}

const chatBody = (stream: boolean): string => JSON.stringify({
  model: 'openai/gpt-4o-mini',
  messages: [{ role: 'user', content: 'Say hello to the benchmark.' }],
  ...(stream ? { stream: true } : {})
})

/** A whole chat.completions SSE answer: every content chunk, then the terminator. */
export function completeChatStream (body: string, chunks: number): boolean {
  return body.endsWith('data: [DONE]\n\n') && countOf(body, '"delta":{"content":') === chunks
}

export const WORKLOADS = {
  chat: {
    name: 'chat JSON',
    method: 'POST',
    path: '/v1/chat/completions',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${BENCH_KEY}` },
    body: chatBody(false),
    verify: (body) => body.includes('"object":"chat.completion"') && body.endsWith('}')
  },
  chatStream: {
    name: `chat SSE ${STREAM_CHUNKS} chunks`,
    method: 'POST',
    path: '/v1/chat/completions',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${BENCH_KEY}`, 'x-mock-chunks': String(STREAM_CHUNKS) },
    body: chatBody(true),
    verify: (body) => completeChatStream(body, STREAM_CHUNKS)
  }
} satisfies Record<string, Workload>

/** Billing (the full gateway) keeps at least this share of the bare proxy's throughput, embedded. */
export const BILLING_GOAL = 0.7
/** Auth on the hot path costs at most 10% of the core's throughput. */
export const AUTH_GOAL = 0.9

/** Portkey's gateway is measured too when BENCH_PORTKEY_DIR names its install (bench/children/portkey.ts). */
export const WITH_PORTKEY = (process.env.BENCH_PORTKEY_DIR ?? '') !== ''
/** The full gateway (embedded) serves at least this many times Portkey's throughput. */
export const PORTKEY_GOAL = 5

const rowsFor = (workload: Workload): Scenario[] => [
  { workload, target: 'gateway-core' },
  { workload, target: 'gateway-auth' },
  { workload, target: 'gateway-nostore' },
  { workload, target: 'gateway', goal: BILLING_GOAL },
  { workload, target: 'gateway-pg' },
  ...(WITH_PORTKEY ? [{ workload, target: 'portkey' }] : [])
]

export const SCENARIOS: readonly Scenario[] = [...rowsFor(WORKLOADS.chat), ...rowsFor(WORKLOADS.chatStream)]

export const COMPARISONS: readonly Comparison[] = [
  { label: 'auth cost', target: 'gateway-auth', over: 'gateway-core', goal: AUTH_GOAL },
  { label: 'billing cost', target: 'gateway', over: 'gateway-auth' },
  { label: 'billing logic, no storage', target: 'gateway-nostore', over: 'gateway-auth' },
  { label: 'storage writes', target: 'gateway', over: 'gateway-nostore' },
  { label: 'billing cost, PostgreSQL', target: 'gateway-pg', over: 'gateway-auth' },
  ...(WITH_PORTKEY ? [{ label: 'gateway over Portkey', target: 'gateway', over: 'portkey', goal: PORTKEY_GOAL }] : [])
]

/**
 * Load settings. 50 connections: enough to saturate one core of the target without queueing in
 * the mock. Full: 2 workloads × 6 targets × 2 runs × 10 s = 4 min of load, about 4.5 min in
 * all with the memory test; quick: one run of each, about 1 min.
 */
export const LOAD = {
  connections: 50,
  /**
   * repetitions: rounds of measured runs per workload, the targets alternating in each; the
   * report shows each target's median, and its ratio to the bare proxy as the median of its
   * per-round ratios (report.ts pairedRatio). Four short rounds rather than two long ones: the
   * machine's speed drifts by tens of percent over minutes (two full runs 12 minutes apart put
   * the gateway at 0.64 and 0.51 of the bare proxy on chat JSON). The first round warms each
   * target for `firstWarmupS`: the gateway's CPU per request still fell from 285 to 168 µs over
   * four rounds of a run whose targets had 2 s each (V8's tiering and young-generation sizing).
   */
  full: { durationS: 4, warmupS: 2, repetitions: 4, firstWarmupS: 10 },
  quick: { durationS: 3, warmupS: 1, repetitions: 1, firstWarmupS: 1 }
} as const

/** Concurrent slow streams held open through each target while its memory is sampled. */
export const MEMORY = {
  streams: 2000,
  chunks: STREAM_CHUNKS,
  sampleIntervalMs: 250,
  /** Streams start over this long; each lasts chunks × chunkDelayMs, longer than the ramp. */
  rampMs: 1000,
  targets: ['bare', 'gateway'],
  full: { chunkDelayMs: 250 },
  quick: { chunkDelayMs: 150 }
} as const
