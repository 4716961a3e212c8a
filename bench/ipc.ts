// Messages between the bench process and its children (mock upstream, bare proxy, gateway).

/** `process.memoryUsage()` plus whatever the child's probe adds (e.g. the mock's active requests). */
export interface MemorySample {
  /** ms since the child started. */
  at: number
  rss: number
  heapUsed: number
  heapTotal: number
  external: number
  arrayBuffers: number
  probe: Record<string, number>
}

export type ToChild =
  | { type: 'sample', intervalMs: number }
  | { type: 'sample-stop' }
  /** Answer with one sample, after two full GCs when `gc` (the child runs with --expose-gc). */
  | { type: 'snapshot', id: number, gc: boolean }
  | { type: 'stop' }

export type FromChild =
  | { type: 'ready', url: string }
  | { type: 'sample', sample: MemorySample }
  | { type: 'snapshot', id: number, sample: MemorySample }
  | { type: 'failed', message: string }

export function isFromChild (m: unknown): m is FromChild {
  return typeof m === 'object' && m !== null && typeof (m as { type?: unknown }).type === 'string'
}

export function isToChild (m: unknown): m is ToChild {
  return typeof m === 'object' && m !== null && typeof (m as { type?: unknown }).type === 'string'
}
