// Messages between the bench process and its children (mock upstream, bare proxy, gateways).

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

/** Ledger figures of the seeded bench account (children whose server bills). */
export interface BillingCounts {
  /** Charge entries in the ledger. */
  charges: number
  /** Holds still open (each is a request not settled or released yet). */
  openHolds: number
  /** Seeded balance minus the current one, in nano-units (a bigint as a decimal string). */
  spentNanos: string
}

/**
 * What a gateway child saw, cumulative since it started. Taken once the server is quiet: every
 * request it received has finished and (with billing) no hold is open, or the wait timed out.
 */
export interface ChildReport {
  /** HTTP requests the server received. */
  received: number
  /** Requests the gateway finished (its onFinish), all of them. */
  finished: number
  /** Finished with a 2xx status, whether or not the client read the whole answer. */
  finished2xx: number
  /** Finished 2xx with outcome `completed`: the whole answer was delivered. */
  completed2xx: number
  /** False when the server was still busy when the wait for quiet gave up. */
  quiet: boolean
  billing: BillingCounts | null
}

export type ToChild =
  | { type: 'sample', intervalMs: number }
  | { type: 'sample-stop' }
  /** Answer with one sample, after two full GCs when `gc` (the child runs with --expose-gc). */
  | { type: 'snapshot', id: number, gc: boolean }
  /** Answer with the child's report (null when the child keeps none). */
  | { type: 'report', id: number }
  | { type: 'stop' }

export type FromChild =
  | { type: 'ready', url: string }
  | { type: 'sample', sample: MemorySample }
  | { type: 'snapshot', id: number, sample: MemorySample }
  | { type: 'report', id: number, report: ChildReport | null, error?: string }
  | { type: 'failed', message: string }

export function isFromChild (m: unknown): m is FromChild {
  return typeof m === 'object' && m !== null && typeof (m as { type?: unknown }).type === 'string'
}

export function isToChild (m: unknown): m is ToChild {
  return typeof m === 'object' && m !== null && typeof (m as { type?: unknown }).type === 'string'
}
