import type { GatewayConfig } from '../config/types.js'
import type { JobKind } from '../store/jobs/types.js'
import { JOB_KIND_OF, upstreamIdPath } from './job-kinds.js'

/** Where each job kind is polled and downloaded upstream: compiled from the job routes at boot. */
export interface JobRoutes {
  /** The upstream path (no query) of a job's status or content, or undefined when no route declares it. */
  upstreamPath (kind: JobKind, what: 'poll' | 'content', upstreamId: string): string | undefined
}

/** Pure: the `upstream.path` of every `job: poll` and `job: content` route, by job kind. */
export function compileJobRoutes (config: GatewayConfig): JobRoutes {
  const templates = new Map<string, string>()
  for (const r of config.routes) {
    if ((r.job !== 'poll' && r.job !== 'content') || !r.upstream) continue
    const kind = JOB_KIND_OF[r.operation]
    if (kind === undefined) throw new Error(`job route ${r.path} has operation ${r.operation}, which names no job kind`)
    templates.set(`${kind} ${r.job}`, r.upstream.path)
  }
  return {
    upstreamPath (kind, what, upstreamId) {
      const template = templates.get(`${kind} ${what}`)
      return template?.replace('{id}', upstreamIdPath(kind, upstreamId))
    }
  }
}
