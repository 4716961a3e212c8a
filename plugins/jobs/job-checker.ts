import { callUpstream } from '../upstream/forward.js'
import type { Upstreams } from '../upstream/providers.js'
import type { JobRecord } from '../store/jobs/types.js'
import { observe, type Observation } from './job-kinds.js'
import type { JobRoutes } from './job-routes.js'
import { parseObject, readBounded } from './read-json.js'

/** What one upstream status check found. */
export type JobCheck =
  | { kind: 'observed', observation: Observation }
  /** The upstream answered 404: it no longer knows the job. */
  | { kind: 'gone' }
  /** No usable answer (unreachable, 5xx, not JSON): try again later. */
  | { kind: 'unknown', reason: string }

export interface JobChecker {
  check (job: JobRecord): Promise<JobCheck>
}

/**
 * Asks a job's own provider for its status, with the operator's credential and nothing of any
 * client's request (no client headers, no query string).
 */
export function createJobChecker (upstreams: Upstreams, routes: JobRoutes): JobChecker {
  return {
    async check (job) {
      const path = routes.upstreamPath(job.kind, 'poll', job.upstreamId)
      if (path === undefined) return { kind: 'unknown', reason: `no poll route for ${job.kind} jobs` }
      let provider
      try {
        provider = upstreams.provider(job.provider)
      } catch {
        return { kind: 'unknown', reason: `provider ${job.provider} is no longer configured` }
      }
      try {
        const res = await callUpstream(upstreams.dispatcher, {
          provider,
          method: 'GET',
          path: provider.basePath + path,
          headers: { accept: 'application/json', 'accept-encoding': 'identity', ...provider.headers },
          headersTimeoutMs: provider.timeoutMs,
          body: undefined
        })
        if (res.statusCode === 404) {
          res.body.resume()
          return { kind: 'gone' }
        }
        if (res.statusCode >= 300) {
          res.body.resume()
          return { kind: 'unknown', reason: `upstream status ${res.statusCode}` }
        }
        const answer = parseObject(await readBounded(res.body))
        if (answer === null) return { kind: 'unknown', reason: 'the upstream answer is not a JSON object' }
        return { kind: 'observed', observation: observe(job.kind, answer) }
      } catch (err) {
        return { kind: 'unknown', reason: err instanceof Error ? err.message : 'upstream request failed' }
      }
    }
  }
}
