import type { GatewayConfig } from '../../foundation/config/types.js'
import type { JobKind } from '../../foundation/store/jobs/types.js'
import { compileOperations, type CompiledOperations } from '../../foundation/operations/index.js'
import { jobKindOf, upstreamIdPath } from './job-kinds.js'

/** Where each job kind is polled and downloaded upstream: compiled from the job routes at boot. */
export interface JobRoutes {
  /** The upstream path (no query) of a job's status or content, or undefined when no route declares it. */
  upstreamPath (kind: JobKind, what: 'poll' | 'content', upstreamId: string): string | undefined
}

/** Pure: the `upstream.path` of every `job: poll` and `job: content` route, by job kind. */
export function compileJobRoutes (config: Pick<GatewayConfig, 'routes' | 'operations'>, operations: CompiledOperations = compileOperations(config)): JobRoutes {
  const templates = new Map<string, string>()
  for (const r of config.routes) {
    const op = operations.get(r.operation)
    const role = op?.job?.role
    if ((role !== 'poll' && role !== 'content') || !r.upstream) continue
    const kind = jobKindOf(op)
    if (kind === undefined) throw new Error(`job route ${r.path} has operation ${r.operation}, which names no job kind`)
    templates.set(`${kind} ${role}`, r.upstream.path)
  }
  return Object.freeze({
    upstreamPath (kind: JobKind, what: 'poll' | 'content', upstreamId: string) {
      const template = templates.get(`${kind} ${what}`)
      return template?.replace('{id}', upstreamIdPath(kind, upstreamId))
    }
  })
}
