// Cross-checks of the operations table that a schema cannot express: every route's operation
// is declared, a route's job role agrees with its operation's, a meter's options fit its kind,
// and a feature's declaration is one of its forms. That every operation a priced model serves has a meter that bills is part of the
// model's pricing completeness (plugins/foundation/pricing/completeness.ts). Pure and tolerant of a
// config that failed the schema (the loader still runs it to report every problem at once).
import type { GatewayConfig } from '../config/types.js'
import type { PathProblem } from '../config/problem.js'
import { operationsTable } from './compile.js'

const isRecord = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v)

/** The form of a feature's match, or the problem with it. */
function matchProblem (m: Record<string, unknown>): string | null {
  const forms = [m.list !== undefined, m.param !== undefined, m.query !== undefined, m.file_references !== undefined].filter(Boolean).length
  if (forms !== 1) return 'match needs exactly one of list (with field and values, or keys), param, query or file_references'
  if (m.file_references !== undefined && m.values !== undefined) return 'a file_references match takes no values'
  if (m.list !== undefined) {
    if ((m.field === undefined) === (m.keys === undefined)) return 'a list match needs field (with values) or keys, not both'
    if (m.field !== undefined && m.values === undefined) return 'a list match by field needs the values that mark the feature'
    if (m.keys !== undefined && m.values !== undefined) return 'a list match by keys takes no values'
  } else if (m.field !== undefined || m.keys !== undefined) {
    return 'field and keys belong to a list match'
  }
  return null
}

/** Problems of one operation's features. */
function checkFeatures (name: string, features: Record<string, unknown>, out: PathProblem[]): void {
  for (const [feature, f] of Object.entries(features)) {
    if (!isRecord(f)) continue
    const at = ['operations', name, 'features', feature]
    if (isRecord(f.match)) {
      const problem = matchProblem(f.match)
      if (problem !== null) out.push({ path: [...at, 'match'], message: problem })
    }
    const uses = isRecord(f.uses) ? f.uses : undefined
    if (uses === undefined && (f.charge === 'per_use' || f.input === 'context_window_per_use')) {
      out.push({ path: at, message: `${f.charge === 'per_use' ? 'charge per_use' : 'input context_window_per_use'} needs uses (a cap and its default)` })
    }
    if (uses?.item_field !== undefined && !(isRecord(f.match) && f.match.list !== undefined)) {
      out.push({ path: [...at, 'uses', 'item_field'], message: 'item_field is a field of a matched list entry: it needs a list match' })
    }
    if (f.default === 'allowed' && f.charge !== 'tokens') {
      out.push({ path: [...at, 'default'], message: `only a feature billed as tokens can be allowed without a price, not one charged ${String(f.charge)}` })
    }
  }
}

export function checkOperations (config: GatewayConfig): PathProblem[] {
  const out: PathProblem[] = []
  const table = operationsTable(config)
  for (const [name, entry] of Object.entries(table)) {
    if (isRecord(entry) && isRecord(entry.features)) checkFeatures(name, entry.features, out)
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
