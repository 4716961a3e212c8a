// Warnings (not errors: the config loads) for a model that leaves out the facts the hold and the
// door checks read. A model serving a token-metered operation without `context_window` refuses
// every request whose input the gateway cannot count (media by URL, fetching tools) and skips
// MODEL_CONTEXT_EXCEEDED; without `max_output_tokens` it holds 4096 output tokens, which is not
// a bound; without `service_tiers` any tier passes to the provider; without `pricing.features`
// every feature of its operations is refused. `check` prints them and exits 0.
import type { GatewayConfig } from '../../foundation/config/types.js'
import type { PathProblem } from '../../foundation/config/problem.js'
import { operationsTable } from '../../foundation/operations/index.js'

const isRecord = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v)

const FACTS: ReadonlyArray<readonly [key: string, why: string]> = [
  ['context_window', 'input the gateway cannot count (media by URL or file id, fetching tools) is refused on it and MODEL_CONTEXT_EXCEEDED is not checked'],
  ['max_output_tokens', 'a request without a max-tokens parameter is held for 4096 output tokens, which the provider may exceed'],
  ['service_tiers', 'any service_tier is passed to the provider (MODEL_SERVICE_TIER_UNAVAILABLE is not checked)']
]

export function modelFactWarnings (config: GatewayConfig): PathProblem[] {
  const out: PathProblem[] = []
  const table = operationsTable(config)
  const models = Array.isArray(config.models) ? config.models : []
  models.forEach((model, i) => {
    if (!isRecord(model) || !isRecord(model.operations) || model.status === 'retired') return
    const served = Object.keys(model.operations).map((name) => table[name])
    const tokens = served.some((op) => isRecord(op) && isRecord(op.meter) && op.meter.kind === 'tokens')
    if (tokens) {
      const missing = FACTS.filter(([key]) => (model as unknown as Record<string, unknown>)[key] === undefined)
      for (const [key, why] of missing) out.push({ path: ['models', i, 'id'], message: `warning: declares no ${key}: ${why}` })
    }
    const features = served.some((op) => isRecord(op) && isRecord(op.features) && Object.keys(op.features).length > 0)
    if (features && isRecord(model.pricing) && model.pricing.features === undefined) {
      out.push({ path: ['models', i, 'pricing'], message: 'warning: declares no features: every tool and tier its operations price apart is refused; price or refuse them in pricing.features' })
    }
  })
  return out
}
