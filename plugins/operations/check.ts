// Cross-checks of the operations table that a schema cannot express: every route's operation
// is declared, a route's job role agrees with its operation's, every operation a priced model
// serves has a meter that bills, and a meter's options fit its kind. Pure and tolerant of a
// config that failed the schema (the loader still runs it to report every problem at once).
import type { GatewayConfig } from '../config/types.js'
import type { PathProblem } from '../config/problem.js'
import { operationEntries } from './compile.js'

const isRecord = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v)

/** Meter kinds under which a request bills nothing itself. */
const FREE_METERS: ReadonlySet<unknown> = new Set(['none', 'job_poll'])

export function checkOperations (config: GatewayConfig): PathProblem[] {
  const out: PathProblem[] = []
  const table: Record<string, unknown> = isRecord(config.operations) ? config.operations : operationEntries(config)
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
  const models = Array.isArray(config.models) ? config.models : []
  models.forEach((model: unknown, i) => {
    if (!isRecord(model) || !isRecord(model.operations) || !isRecord(model.pricing)) return
    for (const name of Object.keys(model.operations)) {
      const entry = table[name]
      const meter = isRecord(entry) && isRecord(entry.meter) ? entry.meter.kind : undefined
      if (meter === undefined) {
        out.push({ path: ['models', i, 'operations', name], at: 'key', message: `operation "${name}" has no meter: declare it under operations, or the priced model would serve it free` })
      } else if (FREE_METERS.has(meter)) {
        out.push({ path: ['models', i, 'operations', name], at: 'key', message: `operation "${name}" is metered ${String(meter)}, which bills nothing: the priced model would serve it free` })
      }
    }
  })
  return out
}
