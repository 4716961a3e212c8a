// A model operation's `meter` (what its provider reports differently from the operation's
// dialect) against the operation it meters. Pure and tolerant of a config that failed the schema
// (the loader still runs it to report every problem at once).
import type { GatewayConfig } from '../../foundation/config/types.js'
import { isObject, type PathProblem } from '../../foundation/config/problem.js'

/** Each model operation's `meter`, checked against its operation in `operations` (operationsTable). */
export function checkModelMeters (config: GatewayConfig, operations: Record<string, unknown>): PathProblem[] {
  const out: PathProblem[] = []
  const models: readonly unknown[] = Array.isArray(config.models) ? config.models : []
  models.forEach((model, i) => {
    if (!isObject(model) || !isObject(model.operations)) return
    for (const [operation, entry] of Object.entries(model.operations)) {
      const meter = isObject(entry) ? entry.meter : undefined
      out.push(...meterProblems(operations[operation], meter).map((p) => ({ ...p, path: ['models', i, 'operations', operation, 'meter', ...p.path] })))
    }
  })
  return out
}

/**
 * A model operation's `meter` reads a chat-completions usage object: only an operation metered
 * in tokens with the chat dialect has one, and only one with a usage chunk asks for it.
 */
function meterProblems (operation: unknown, meter: unknown): PathProblem[] {
  if (!isObject(meter)) return []
  const m = isObject(operation) && isObject(operation.meter) ? operation.meter : {}
  const chat = m.kind === 'tokens' && m.dialect === 'chat'
  const out: PathProblem[] = []
  if (meter.usage !== undefined && !chat) out.push({ path: ['usage'], message: 'usage fields are read from a chat-completions usage object: the operation must be metered with kind tokens, dialect chat' })
  if (meter.stream_usage === 'always' && !(chat && isObject(operation) && operation.usage_chunk === true)) {
    out.push({ path: ['stream_usage'], message: 'stream_usage: always only applies to an operation whose streams get a usage chunk (usage_chunk: true)' })
  }
  return out
}
