// The scenario table. A workload is one request shape; a scenario row measures one target on
// one workload against the bare proxy (BASELINE) on the same workload, in alternating runs.
// Later slices add rows (e.g. { workload: chat, target: 'gateway-auth' }) and targets.

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
    headers: { 'content-type': 'application/json', authorization: 'Bearer gw_live_benchmark0123456789abcdef' },
    body: chatBody(false),
    verify: (body) => body.includes('"object":"chat.completion"') && body.endsWith('}')
  },
  chatStream: {
    name: `chat SSE ${STREAM_CHUNKS} chunks`,
    method: 'POST',
    path: '/v1/chat/completions',
    headers: { 'content-type': 'application/json', authorization: 'Bearer gw_live_benchmark0123456789abcdef', 'x-mock-chunks': String(STREAM_CHUNKS) },
    body: chatBody(true),
    verify: (body) => completeChatStream(body, STREAM_CHUNKS)
  }
} satisfies Record<string, Workload>

export const SCENARIOS: readonly Scenario[] = [
  { workload: WORKLOADS.chat, target: 'gateway' },
  { workload: WORKLOADS.chatStream, target: 'gateway' }
]

/** Load settings. 50 connections: enough to saturate one core of the target without queueing in the mock. */
export const LOAD = {
  connections: 50,
  /** Measured runs per target and workload; the report shows their median. */
  repetitions: 2,
  full: { durationS: 10, warmupS: 2 },
  quick: { durationS: 3, warmupS: 1 }
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
