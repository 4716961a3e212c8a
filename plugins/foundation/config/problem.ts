// One config problem, located in a YAML file; the loader collects all of them before throwing.

/** A key or an array index on the way from the config root to a value. */
export type PathSegment = string | number

/** A problem known by its place in the config, before it is located in a YAML file. */
export interface PathProblem {
  path: PathSegment[]
  /** `key` when the map key at `path` is at fault rather than its value. */
  at?: 'key'
  message: string
}

// Readers for checks that must tolerate a config that failed the schema (they run then too, so
// every problem is reported at once): a value is read only when it has the expected shape.
export const isString = (value: unknown): value is string => typeof value === 'string'
export const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object'
/** The value when it is an array, else none. */
export const listOf = (value: unknown): readonly unknown[] => Array.isArray(value) ? value : []

export interface ConfigProblem {
  /** The file as the caller named it (the root) or joined onto the including file's directory. */
  file: string
  /** 1-based line and column of the offending YAML node. */
  line: number
  column: number
  /** Where in the merged config, e.g. `models[3].fallbacks[0]`; empty when the problem has none (YAML syntax). */
  path: string
  message: string
}

export class ConfigError extends Error {
  readonly problems: ConfigProblem[]

  constructor (problems: ConfigProblem[]) {
    const first = problems[0]
    const head = first === undefined ? 'invalid configuration' : formatProblem(first)
    const more = problems.length > 1 ? ` (and ${problems.length - 1} more)` : ''
    super(head + more)
    this.name = 'ConfigError'
    this.problems = problems
  }
}

/** `file:line:col  path  message`; a problem without a config path prints `-` there. */
export function formatProblem (p: ConfigProblem): string {
  return `${p.file}:${p.line}:${p.column}  ${p.path === '' ? '-' : p.path}  ${p.message}`
}

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_-]*$/

/** `['models', 3, 'operations', 'chat.completions']` → `models[3].operations["chat.completions"]`. */
export function formatPath (segments: readonly PathSegment[]): string {
  let out = ''
  for (const seg of segments) {
    if (typeof seg === 'number') out += `[${seg}]`
    else if (IDENTIFIER.test(seg)) out += out === '' ? seg : `.${seg}`
    else out += `[${JSON.stringify(seg)}]`
  }
  return out
}

/** Short, single-line rendering of a value for messages. */
export function showValue (value: unknown): string {
  const text = JSON.stringify(value) ?? String(value)
  return text.length > 60 ? text.slice(0, 57) + '...' : text
}
