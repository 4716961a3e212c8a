// Minimal types for the parts of autocannon's programmatic API the benchmark uses
// (the package ships none and @types/autocannon is not installed).
declare module 'autocannon' {
  export interface Options {
    url: string
    connections?: number
    duration?: number
    /** Total requests to send (instead of a duration). */
    amount?: number
    pipelining?: number
    timeout?: number
    method?: string
    headers?: Record<string, string>
    body?: string
    verifyBody?: (body: string) => boolean
    requests?: Request[]
  }

  /** One entry of `requests`: setupRequest answers the request to send (called before each). */
  export interface Request {
    method?: string
    path?: string
    headers?: Record<string, string>
    body?: string
    setupRequest?: (req: Request, context: Record<string, unknown>) => Request
  }

  export interface Histogram {
    average: number
    mean: number
    stddev: number
    min: number
    max: number
    total: number
    p50: number
    p90: number
    p97_5: number
    p99: number
    p99_9: number
  }

  export interface Result {
    duration: number
    errors: number
    timeouts: number
    mismatches: number
    non2xx: number
    resets: number
    statusCodeStats: Record<string, { count: number }>
    latency: Histogram
    requests: Histogram & { sent: number }
    throughput: Histogram
  }

  export default function autocannon (opts: Options): Promise<Result>
}
