// Content policy: named rules of blocked terms and patterns, compiled once when the config
// loads. A match refuses the request with REQUEST_CONTENT_BLOCKED; what is logged is the rule's
// name, never the text it matched.
import type { ContentRuleConfig } from '../../foundation/config/types.js'
import type { TextJudge } from './scan.js'

interface CompiledRule { readonly name: string, readonly regexes: readonly RegExp[] }

const escapeRegExp = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')

export class ContentPolicy implements TextJudge {
  private readonly rules: readonly CompiledRule[]

  /** Throws (naming the rule and `where`) when a pattern is not a valid regular expression. */
  constructor (rules: readonly ContentRuleConfig[], where: string) {
    this.rules = Object.freeze(rules.map((r) => {
      const regexes: RegExp[] = []
      // All terms of a rule in one case-insensitive alternation.
      if (r.terms !== undefined && r.terms.length > 0) regexes.push(new RegExp(r.terms.map(escapeRegExp).join('|'), 'i'))
      for (const p of r.patterns ?? []) {
        try {
          regexes.push(new RegExp(p, 'i'))
        } catch (err) {
          throw new Error(`${where}: content_policy rule ${r.name} has an invalid pattern: ${(err as Error).message}`)
        }
      }
      return Object.freeze({ name: r.name, regexes: Object.freeze(regexes) })
    }))
  }

  get size (): number {
    return this.rules.length
  }

  /** The name of the first rule the text breaks, or null. */
  judge (text: string): string | null {
    for (const rule of this.rules) {
      for (const re of rule.regexes) if (re.test(text)) return rule.name
    }
    return null
  }
}
