import type { Readable } from 'node:stream'
import type { JobRecord } from '../../foundation/store/jobs/types.js'
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
 * How the checker reaches a provider: a GET of `path` at the named provider with the operator's
 * credentials and nothing of any client's request; throws when the provider is gone or the call
 * fails. The composition root gives the upstream concern's (createStatusReader), so jobs import
 * nothing of upstream; jobs own it (close() closes it).
 */
export interface ProviderReader {
  get (provider: string, path: string): Promise<{ statusCode: number, body: Readable }>
  close (): Promise<void>
}

/**
 * Asks a job's own provider for its status, with the operator's credential and nothing of any
 * client's request (no client headers, no query string).
 */
export function createJobChecker (reader: Pick<ProviderReader, 'get'>, routes: JobRoutes): JobChecker {
  return {
    async check (job) {
      const path = routes.upstreamPath(job.kind, 'poll', job.upstreamId)
      if (path === undefined) return { kind: 'unknown', reason: `no poll route for ${job.kind} jobs` }
      try {
        const res = await reader.get(job.provider, path)
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
