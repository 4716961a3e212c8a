// One autocannon run against one target, reduced to the numbers the report needs.
import autocannon, { type Request as CannonRequest } from 'autocannon'
import type { Workload } from './scenarios.js'

export interface LoadOptions {
  url: string
  workload: Workload
  /** Headers from the target's prepare() (e.g. auth), over the workload's own. */
  headers: Readonly<Record<string, string>>
  connections: number
  durationS: number
  /**
   * Keys to spread the load over: each request picks one at random for its Authorization
   * header (autocannon's setupRequest rebuilds every request, even with one key, so runs with
   * one key and with many cost the load generator the same). Absent: the headers as they are.
   */
  keys?: readonly string[] | undefined
  /** Requests per second over all connections (autocannon's overallRate); absent: as fast as answered. */
  rate?: number | undefined
}

export interface LoadFailures {
  errors: number
  timeouts: number
  non2xx: number
  /** 2xx answers whose body was not the whole expected response. */
  mismatches: number
  resets: number
  statusCodes: Record<string, number>
}

export interface LoadRun {
  reqPerSec: number
  p50Ms: number
  p99Ms: number
  bytesPerSec: number
  requests: number
  /** Answers with a 2xx status (complete bodies or not). */
  answered2xx: number
  durationS: number
  failures: LoadFailures
}

export function failed (f: LoadFailures): boolean {
  return f.errors + f.timeouts + f.non2xx + f.mismatches + f.resets > 0
}

export function describeFailures (f: LoadFailures): string {
  const codes = Object.entries(f.statusCodes).map(([code, n]) => `${code}×${n}`).join(' ')
  return `errors ${f.errors}, timeouts ${f.timeouts}, non-2xx ${f.non2xx}, incomplete bodies ${f.mismatches}, resets ${f.resets} (status ${codes})`
}

function withRandomKey (keys: readonly string[]): NonNullable<CannonRequest['setupRequest']> {
  if (keys.length === 0) throw new Error('runLoad: keys is empty')
  return (req) => ({ ...req, headers: { ...req.headers, authorization: `Bearer ${keys[Math.floor(Math.random() * keys.length)]}` } })
}

export async function runLoad (o: LoadOptions): Promise<LoadRun> {
  const r = await autocannon({
    url: o.url + o.workload.path,
    method: o.workload.method,
    headers: { ...o.workload.headers, ...o.headers },
    body: o.workload.body,
    connections: o.connections,
    pipelining: 1,
    duration: o.durationS,
    timeout: 10,
    verifyBody: o.workload.verify,
    ...(o.rate !== undefined ? { overallRate: o.rate } : {}),
    ...(o.keys !== undefined ? { requests: [{ setupRequest: withRandomKey(o.keys) }] } : {})
  })
  const statusCodes: Record<string, number> = {}
  let answered2xx = 0
  for (const [code, s] of Object.entries(r.statusCodeStats)) {
    statusCodes[code] = s.count
    if (code.startsWith('2')) answered2xx += s.count
  }
  return {
    reqPerSec: r.requests.average,
    p50Ms: r.latency.p50,
    p99Ms: r.latency.p99,
    bytesPerSec: r.throughput.average,
    requests: r.requests.total,
    answered2xx,
    durationS: r.duration,
    failures: { errors: r.errors, timeouts: r.timeouts, non2xx: r.non2xx, mismatches: r.mismatches, resets: r.resets, statusCodes }
  }
}

/** One request outside autocannon, so a broken target fails loudly before minutes of load. */
export async function probeOnce (o: Pick<LoadOptions, 'url' | 'workload' | 'headers'>): Promise<string | null> {
  let res: Response
  let text: string
  try {
    res = await fetch(o.url + o.workload.path, {
      method: o.workload.method,
      headers: { ...o.workload.headers, ...o.headers },
      body: o.workload.body
    })
    text = await res.text()
  } catch (err) {
    const cause = (err as { cause?: unknown }).cause
    return `request failed: ${String(err)}${cause === undefined ? '' : ` (${String(cause)})`}`
  }
  if (res.status < 200 || res.status >= 300) return `status ${res.status}: ${text.slice(0, 300)}`
  if (!o.workload.verify(text)) return `status ${res.status} but incomplete body: ${text.slice(0, 300)}`
  return null
}
