// What the schema cannot say about the admission declarations: a content-policy pattern must
// compile as a regular expression, and a parameter range must not be empty. Reported by
// `model-gateway check` with the config path, so a bad pattern never reaches a running gateway.
import type { PathProblem } from '../../foundation/config/problem.js'
import type { ContentRuleConfig, GatewayConfig } from '../../foundation/config/types.js'

function checkRules (rules: readonly ContentRuleConfig[] | undefined, at: Array<string | number>): PathProblem[] {
  const out: PathProblem[] = []
  if (!Array.isArray(rules)) return out
  rules.forEach((rule, i) => {
    const patterns: unknown[] = Array.isArray(rule?.patterns) ? rule.patterns : []
    patterns.forEach((p, j) => {
      if (typeof p !== 'string') return
      try {
        // eslint-disable-next-line no-new
        new RegExp(p, 'i')
      } catch (err) {
        out.push({ path: [...at, i, 'patterns', j], message: `is not a valid regular expression: ${(err as Error).message}` })
      }
    })
  })
  return out
}

export function checkAdmission (config: GatewayConfig): PathProblem[] {
  const out: PathProblem[] = []
  ;(Array.isArray(config.routes) ? config.routes : []).forEach((r, i) => {
    out.push(...checkRules(r?.content_policy, ['routes', i, 'content_policy']))
  })
  ;(Array.isArray(config.models) ? config.models : []).forEach((m, i) => {
    out.push(...checkRules(m?.content_policy, ['models', i, 'content_policy']))
    for (const [name, rule] of Object.entries(m?.parameters ?? {})) {
      if (typeof rule?.min === 'number' && typeof rule.max === 'number' && rule.min > rule.max) {
        out.push({ path: ['models', i, 'parameters', name], message: `min ${rule.min} is above max ${rule.max}: no value would be accepted` })
      }
    }
  })
  return out
}
