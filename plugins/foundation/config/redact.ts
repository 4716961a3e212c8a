// Config problems never echo a value the environment supplied: it may be a credential that
// landed in the wrong field (`port: ${MUSIC_API_KEY}`), and problems reach the reload answer,
// `check`'s output, the log and (before this) a public endpoint. Such a value is named by its
// variable instead: "must be an integer; got a string from ${MUSIC_API_KEY}".
import type { EnvUse } from './expand-env.js'
import type { PathProblem } from './problem.js'

const TYPE_OF: Record<string, string> = { string: 'a string', number: 'a number', bigint: 'a number', boolean: 'a boolean' }

/** `from ${A}` or `from ${A}, ${B}`. */
export function fromVariables (uses: readonly EnvUse[]): string {
  return `from ${[...new Set(uses.map((u) => '${' + u.name + '}'))].join(', ')}`
}

/** What a problem says it got when the value came from the environment: its type and the variable. */
export function describeEnvValue (value: unknown, uses: readonly EnvUse[]): string {
  const type = value === null ? 'null' : Array.isArray(value) ? 'a list' : TYPE_OF[typeof value] ?? 'a value'
  return `${type} ${fromVariables(uses)}`
}

// Not secrets, and short or common enough that replacing them would garble messages ("true or false").
const HARMLESS = /^(?:-?\d+(?:\.\d+)?|true|false|null|yes|no|on|off)$/i
/** Shorter values are replaced only in a problem about the value itself. */
const MIN_ANYWHERE = 6

const escapeRegExp = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')

/** A value as it may appear in a message: raw, and as JSON.stringify writes it (inside its quotes). */
function forms (value: string): string[] {
  const json = JSON.stringify(value).slice(1, -1)
  return json === value ? [value] : [value, json]
}

/**
 * Replaces, in a problem's message, every value the environment put into the config by its
 * `${NAME}`: the values at the problem's own path whatever their length, and anywhere any value
 * long enough to be a secret (a cross-check may quote another field's value). Only whole values,
 * not inside a longer word or number.
 */
export function envRedactor (everywhere: readonly EnvUse[]): (problem: PathProblem, own: readonly EnvUse[] | undefined) => PathProblem {
  const global = everywhere.filter((u) => u.value.length >= MIN_ANYWHERE && !HARMLESS.test(u.value))
  return (problem, own) => {
    const uses = [...(own ?? []), ...global].sort((a, b) => b.value.length - a.value.length)
    if (uses.length === 0) return problem
    let message = problem.message
    for (const use of uses) {
      for (const form of forms(use.value)) {
        if (!message.includes(form)) continue
        message = message.replace(new RegExp(`(?<![A-Za-z0-9_])${escapeRegExp(form)}(?![A-Za-z0-9_])`, 'g'), '${' + use.name + '}')
      }
    }
    return message === problem.message ? problem : { ...problem, message }
  }
}
