// Cross-checks of the operations table that a schema cannot express: every route's operation
// is declared, a route's job role agrees with its operation's, and a meter's options fit its
// kind. That every operation a priced model serves has a meter that bills is part of the
// model's pricing completeness (plugins/pricing/completeness.ts). Pure and tolerant of a
// config that failed the schema (the loader still runs it to report every problem at once).
import type { GatewayConfig } from '../config/types.js'
import type { PathProblem } from '../config/problem.js'
import { operationsTable } from '../pricing/completeness.js'

const isRecord = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v)

export function checkOperations (config: GatewayConfig): PathProblem[] {
  const out: PathProblem[] = []
  const table = operationsTable(config)
  for (const [name, entry] of Object.entries(table)) {
    if (!isRecord(entry) || !isRecord(entry.meter)) continue
    const { kind, dialect, per_call: perCall } = entry.meter
    if (kind === 'tokens' && dialect === undefined) out.push({ path: ['operations', name, 'meter'], message: 'meter kind tokens needs a dialect (chat, responses, messages or genai)' })
    if (kind !== 'tokens' && dialect !== undefined) out.push({ path: ['operations', name, 'meter', 'dialect'], message: `a dialect is only read by meter kind tokens, not ${String(kind)}` })
    if (kind !== 'images' && perCall !== undefined) out.push({ path: ['operations', name, 'meter', 'per_call'], message: `per_call is only read by meter kind images, not ${String(kind)}` })
  }
  const routes = Array.isArray(config.routes) ? config.routes : []
  routes.forEach((route: unknown, i) => {
    if (!isRecord(route) || typeof route.operation !== 'string') return
    const entry = table[route.operation]
    if (!isRecord(entry)) {
      out.push({ path: ['routes', i, 'operation'], message: `operation "${route.operation}" is not declared in operations and is not built in` })
      return
    }
    const role = isRecord(entry.job) ? entry.job.role : undefined
    if (route.job !== undefined && route.job !== role) {
      out.push({ path: ['routes', i, 'job'], message: `job "${String(route.job)}" disagrees with operation "${route.operation}", ${role === undefined ? 'which has no job role' : `whose job role is ${String(role)}`}` })
    }
  })
  return out
}
