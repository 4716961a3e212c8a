// `${VAR}` and `${VAR:-default}` expansion on the YAML AST, before the document becomes JS,
// so that every node keeps its source range (line and column stay right) and a plain
// scalar that expands to `8080` or `true` becomes a number or boolean exactly as if it had
// been written literally. Quoted scalars stay strings. `$${` is a literal `${`.
// Keys are not expanded: a config's shape does not depend on the environment.
import { isAlias, isMap, isScalar, isSeq, Scalar, type Document, type Node } from 'yaml'
import type { PathSegment } from './problem.js'

export type Env = Readonly<Record<string, string | undefined>>

export interface EnvProblem {
  /** Offset of the `${` in the file's source text. */
  offset: number
  path: PathSegment[]
  message: string
}

/** One variable whose value went into the config (a default written in the file is not one). */
export interface EnvUse {
  name: string
  value: string
}

export interface ExpandResult {
  problems: EnvProblem[]
  /** Scalars whose expansion failed; schema errors about them would only repeat the problem. */
  tainted: Set<Node>
  /**
   * Scalars that took a value from the environment, and which variables: a problem about such a
   * value names the variable, never the value (it may be a credential that landed in the wrong field).
   */
  fromEnv: Map<Node, EnvUse[]>
  /** Puts every expanded scalar back as it was written (its value before the expansion). */
  restore: () => void
}

interface StringProblem {
  /** The reference as written, e.g. `${PORT}`, to find it in the source. */
  ref: string
  message: string
}

const REFERENCE = /^([A-Za-z_][A-Za-z0-9_]*)(?::-([\s\S]*))?$/

/**
 * Expands the references in one string. An unset variable without default expands to ''.
 * `used` collects the variables whose (non-empty) value went in.
 */
export function expandString (input: string, env: Env, used?: EnvUse[]): { value: string; problems: StringProblem[] } {
  const problems: StringProblem[] = []
  let out = ''
  let i = 0
  for (;;) {
    const start = input.indexOf('${', i)
    if (start < 0) break
    if (start > i && input[start - 1] === '$') {
      out += input.slice(i, start - 1) + '${'
      i = start + 2
      continue
    }
    const end = input.indexOf('}', start + 2)
    if (end < 0) {
      problems.push({ ref: input.slice(start), message: `unterminated environment reference ${input.slice(start)}` })
      break
    }
    const ref = input.slice(start, end + 1)
    const match = REFERENCE.exec(input.slice(start + 2, end))
    out += input.slice(i, start)
    i = end + 1
    if (match === null) {
      problems.push({ ref, message: `malformed environment reference ${ref}; write \${NAME} or \${NAME:-default}` })
      continue
    }
    const name = match[1] ?? ''
    const fallback = match[2]
    const value = env[name]
    if (fallback !== undefined && (value === undefined || value === '')) {
      out += fallback
    } else if (value === undefined) {
      problems.push({ ref, message: `environment variable ${name} is not set and ${ref} has no default` })
    } else {
      out += value
      if (value !== '') used?.push({ name, value })
    }
  }
  return { value: out + input.slice(i), problems }
}

/**
 * Expands every scalar value of `doc` in place (`restore` undoes it). `source` is the text `doc`
 * was parsed from.
 */
export function expandDocumentEnv (doc: Document, source: string, env: Env): ExpandResult {
  const written: Array<[Scalar, unknown]> = []
  const result: Expansion = {
    problems: [],
    tainted: new Set(),
    fromEnv: new Map(),
    written,
    restore: () => { for (const [node, value] of written.splice(0)) node.value = value },
  }
  walk(doc, doc.contents, [], source, env, result)
  return result
}

/** An expansion under way: the scalars it changed, with their values as written. */
interface Expansion extends ExpandResult { written: Array<[Scalar, unknown]> }

function walk (doc: Document, node: unknown, path: PathSegment[], source: string, env: Env, result: Expansion): void {
  if (isAlias(node)) return // expanded where its anchor is
  if (isMap(node)) {
    for (const pair of node.items) {
      const key = isScalar(pair.key) ? String(pair.key.value) : String(pair.key)
      walk(doc, pair.value, [...path, key], source, env, result)
    }
  } else if (isSeq(node)) {
    node.items.forEach((item, index) => { walk(doc, item, [...path, index], source, env, result) })
  } else if (isScalar(node) && typeof node.value === 'string' && node.value.includes('${')) {
    expandScalar(doc, node, path, source, env, result)
  }
}

function expandScalar (doc: Document, node: Scalar, path: PathSegment[], source: string, env: Env, result: Expansion): void {
  const used: EnvUse[] = []
  const { value, problems } = expandString(String(node.value), env, used)
  if (used.length > 0) result.fromEnv.set(node, used)
  const [from = 0, to = from] = node.range ?? []
  let cursor = from
  for (const problem of problems) {
    const at = source.slice(0, to).indexOf(problem.ref, cursor)
    const offset = at < 0 ? from : at
    cursor = at < 0 ? cursor : at + problem.ref.length
    result.problems.push({ offset, path, message: problem.message })
  }
  if (problems.length > 0) result.tainted.add(node)
  result.written.push([node, node.value])
  node.value = node.type === Scalar.PLAIN ? resolvePlain(doc, value) : value
}

/** What YAML would have made of `text` written as a plain scalar: numbers and booleans only. */
function resolvePlain (doc: Document, text: string): unknown {
  for (const tag of doc.schema.tags) {
    if (tag.collection !== undefined || tag.default !== true || tag.test?.test(text) !== true) continue
    const resolved: unknown = tag.resolve(text, () => {}, doc.options)
    const value = isScalar(resolved) ? resolved.value : resolved
    if (typeof value === 'number' || typeof value === 'bigint' || typeof value === 'boolean') return value
    return text
  }
  return text
}
