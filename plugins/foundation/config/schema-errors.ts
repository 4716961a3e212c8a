// ajv errors → config problems an operator can act on: a path into the config, whether
// the YAML key or value is at fault, and a one-line message.
import type { ErrorObject } from 'ajv'
import type { EnvUse } from './expand-env.js'
import { showValue, type PathProblem, type PathSegment } from './problem.js'
import { describeEnvValue } from './redact.js'

export interface SchemaProblem extends PathProblem {
  /** The ajv keyword that failed. */
  keyword: string
}

/** Friendlier names for the patterns used in schemas/. */
const PATTERN_LABELS: Record<string, string> = {
  '^[a-z0-9][a-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._:-]*$': 'a model id like provider/name',
  '^[A-Z][A-Z0-9_]*$': 'an error code in upper case (A-Z, 0-9, _)',
  '^GW-[A-Z]+-[0-9]+$': 'a reference like GW-AREA-1234',
  '^[0-9]+(\\.[0-9]+)?$': 'a decimal string like "2.50"',
  '^/(?:[^{}\\s]|\\{model\\}|\\{id\\})*$': 'a path starting with / (placeholders: {model}, {id})',
  '^https?://[^\\s/?#]+[^\\s?#]*$': 'an http(s) URL',
  '^[a-z][A-Za-z0-9]*(?:[._-][A-Za-z0-9]+)*$': 'an operation name like chat.completions',
  '^[a-z][a-z0-9_-]*$': 'a lower-case name (a-z, 0-9, _, -)',
  "^[a-z0-9!#$%&'*+.^_`|~-]+$": 'a lower-case header name',
  '^[1-5][0-9]{2}$': 'an HTTP status like "429"',
  '^[a-z]{2,3}(-[A-Za-z0-9]{2,8})*$': 'a language tag like en or pt-BR',
  '^/': 'a path starting with /',
  '^[a-z][a-z0-9_]*$': 'a lower-case name (a-z, 0-9, _)',
  '^[A-Za-z][A-Za-z0-9-]*$': 'an authorization scheme like Bearer',
  '^[A-Za-z_][A-Za-z0-9_.-]*$': 'a field name'
}

/** JSON Schema types as a YAML author knows them. */
const TYPE_NAMES: Record<string, string> = {
  integer: 'an integer',
  number: 'a number',
  string: 'a string',
  boolean: 'true or false',
  object: 'a mapping',
  array: 'a list'
}

/** Decodes an ajv instancePath, typing a segment as a number where the data is an array. */
export function pointerToPath (pointer: string, data: unknown): PathSegment[] {
  if (pointer === '') return []
  const out: PathSegment[] = []
  let cur = data
  for (const raw of pointer.slice(1).split('/')) {
    const seg = raw.replace(/~1/g, '/').replace(/~0/g, '~')
    if (Array.isArray(cur)) {
      const n = Number(seg)
      out.push(n)
      cur = cur[n] as unknown
    } else {
      out.push(seg)
      cur = cur !== null && typeof cur === 'object' ? (cur as Record<string, unknown>)[seg] : undefined
    }
  }
  return out
}

function valueAt (data: unknown, path: readonly PathSegment[]): unknown {
  let cur = data
  for (const seg of path) {
    if (cur === null || typeof cur !== 'object') return undefined
    cur = (cur as Record<string, unknown>)[String(seg)]
  }
  return cur
}

/** Where a value came from: the variables of a value the environment supplied, else undefined. */
export type EnvOrigin = (path: readonly PathSegment[]) => readonly EnvUse[] | undefined

/**
 * Turns ajv's errors into located messages; `data` is the validated (merged) config. A value
 * `origin` says came from the environment is described by its type and variable, never shown.
 */
export function describeSchemaErrors (errors: readonly ErrorObject[], data: unknown, origin: EnvOrigin = () => undefined): SchemaProblem[] {
  const out: SchemaProblem[] = []
  for (const error of errors) {
    const path = pointerToPath(error.instancePath, data)
    const problem = describe(error, path, data, origin)
    if (problem !== undefined) out.push({ ...problem, keyword: error.keyword })
  }
  return out
}

function describe (error: ErrorObject, path: PathSegment[], data: unknown, origin: EnvOrigin): PathProblem | undefined {
  const params = error.params as Record<string, unknown>
  const show = (at: PathSegment[]): string => {
    const uses = origin(at)
    return uses === undefined ? showValue(valueAt(data, at)) : describeEnvValue(valueAt(data, at), uses)
  }
  const got = (): string => show(path)
  // A bad map key: ajv reports the inner keyword with `propertyName`, then a summary we skip.
  if (error.keyword === 'propertyNames') return undefined
  if (error.propertyName !== undefined) {
    const name = error.propertyName
    const expected = error.keyword === 'pattern' ? label(String(params.pattern)) : error.message ?? 'valid'
    return { path: [...path, name], at: 'key', message: `key ${showValue(name)} must be ${expected}` }
  }
  switch (error.keyword) {
    case 'additionalProperties': {
      const key = String(params.additionalProperty)
      const known = Object.keys((error.parentSchema?.properties ?? {}) as Record<string, unknown>)
      const guess = closest(key, known)
      return { path: [...path, key], at: 'key', message: `unknown key ${showValue(key)}` + (guess === undefined ? '' : ` (did you mean "${guess}"?)`) }
    }
    case 'required':
      return { path, message: `missing required key ${showValue(params.missingProperty)}` }
    case 'type':
      return { path, message: `must be ${TYPE_NAMES[String(params.type)] ?? String(params.type)}; got ${got()}` }
    case 'enum':
      return { path, message: `must be one of ${(params.allowedValues as unknown[]).map((v) => String(v)).join(', ')}; got ${got()}` }
    case 'pattern':
      return { path, message: `must be ${label(String(params.pattern))}; got ${got()}` }
    case 'format':
      return { path, message: `must be a valid ${String(params.format)}; got ${got()}` }
    case 'uniqueItems':
      return { path: [...path, Number(params.j)], message: `duplicate of ${show([...path, Number(params.j)])} at index ${String(params.i)}` }
    case 'minimum':
    case 'maximum':
    case 'minLength':
    case 'minItems':
    case 'minProperties':
      return { path, message: `${error.message ?? error.keyword}; got ${got()}` }
    default:
      return { path, message: error.message ?? error.keyword }
  }
}

function label (pattern: string): string {
  return PATTERN_LABELS[pattern] ?? `a match for /${pattern}/`
}

/** The known key a typo most likely meant: a prefix of it, or within 1-2 edits. */
function closest (key: string, known: readonly string[]): string | undefined {
  const prefixed = known.filter((k) => key.length >= 4 && (k.startsWith(key) || key.startsWith(k)))
  if (prefixed.length === 1) return prefixed[0]
  let best: string | undefined
  let bestDistance = key.length <= 5 ? 2 : 3
  for (const candidate of known) {
    const d = distance(key, candidate)
    if (d < bestDistance) { best = candidate; bestDistance = d }
  }
  return best
}

/** Edit distance counting an adjacent transposition as one edit (prot → port). */
function distance (a: string, b: string): number {
  const rows: number[][] = Array.from({ length: a.length + 1 }, (_, i) => [i])
  for (let j = 1; j <= b.length; j++) (rows[0] ?? [])[j] = j
  const at = (i: number, j: number): number => rows[i]?.[j] ?? Number.POSITIVE_INFINITY
  for (let i = 1; i <= a.length; i++) {
    const row = rows[i] ?? []
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1
      let d = Math.min(at(i - 1, j) + 1, at(i, j - 1) + 1, at(i - 1, j - 1) + cost)
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, at(i - 2, j - 2) + 1)
      row[j] = d
    }
  }
  return at(a.length, b.length)
}
