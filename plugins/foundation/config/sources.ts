// Reads the root file and its `include:` files into one merged object, keeping each
// file's YAML document so any config path can be traced back to a line and column.
import { readFileSync } from 'node:fs'
import { dirname, isAbsolute, join, resolve } from 'node:path'
import { LRUCache } from 'lru-cache'
import { isAlias, isMap, isScalar, isSeq, LineCounter, parseDocument, type Document, type Node } from 'yaml'
import { expandDocumentEnv, type Env, type EnvUse } from './expand-env.js'
import { oneByte, oneByteStrings } from './one-byte.js'
import { formatPath, type ConfigProblem, type PathProblem, type PathSegment } from './problem.js'

export interface SourceFile {
  /** As the caller named it, or joined onto the including file's directory. */
  file: string
  doc: Document
  lines: LineCounter
  /** Scalars whose `${ENV}` expansion failed. */
  tainted: Set<Node>
  /** Scalars that took a value from the environment, and from which variables. */
  fromEnv: Map<Node, EnvUse[]>
}

export interface Sources {
  /** Files read, in order: the root first. */
  files: SourceFile[]
  /** Top-level keys of every file, merged; `include` removed. */
  merged: Record<string, unknown>
  /** Which file defined each top-level key. */
  owners: Map<string, SourceFile>
  problems: ConfigProblem[]
  /** False when a file could not be read or parsed: the merged config is then partial. */
  complete: boolean
}

export function readSources (root: string, env: Env): Sources {
  const sources: Sources = { files: [], merged: {}, owners: new Map(), problems: [], complete: true }
  readFile(sources, root, env, [], undefined)
  return sources
}

interface Origin { source: SourceFile; index: number }

/** A file's text as parsed. */
interface Parsed { doc: Document; lines: LineCounter }

/**
 * Texts parsed lately, by their text: parsing is most of a config load (a fifth of a test
 * gateway's boot on the CI machine, where the tests load the same gateway.yaml hundreds of times
 * with a new mock's address each time; a reload reads again the files that did not change). The
 * document is shared by every load of its text, so no load leaves it changed: readFile expands
 * its `${VAR}` scalars, makes the file's JavaScript values from them and puts the scalars back
 * as written, all in one synchronous step. What is kept of it afterwards (line and column, key
 * names, node identity) is the same for every environment.
 */
const recent = new LRUCache<string, Parsed>({ max: 16 })

function parsed (text: string): Parsed {
  let entry = recent.get(text)
  if (entry === undefined) {
    const lines = new LineCounter()
    entry = { doc: parseDocument(text, { lineCounter: lines, prettyErrors: false }), lines }
    recent.set(text, entry)
  }
  return entry
}

function readFile (sources: Sources, file: string, env: Env, chain: string[], origin: Origin | undefined): void {
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch (err) {
    sources.complete = false
    const reason = (err as NodeJS.ErrnoException).code ?? (err as Error).message
    if (origin === undefined) sources.problems.push({ file, line: 1, column: 1, path: '', message: `cannot read ${file} (${reason})` })
    else sources.problems.push(locate(origin.source, { path: ['include', origin.index], message: `cannot read included file ${file} (${reason})` }))
    return
  }
  const { doc, lines } = parsed(text)
  const source: SourceFile = { file, doc, lines, tainted: new Set(), fromEnv: new Map() }
  sources.files.push(source)
  if (doc.errors.length > 0) {
    sources.complete = false
    for (const error of doc.errors) {
      const { line, col } = lines.linePos(error.pos[0])
      sources.problems.push({ file, line, column: col, path: '', message: error.message.split('\n')[0] ?? error.code })
    }
    return
  }
  const expanded = expandDocumentEnv(doc, text, env)
  let js: unknown
  try {
    // mapAsMap: no key of the file becomes a property name before it is a one-byte string (one-byte.ts).
    if (isMap(doc.contents)) js = doc.toJS({ mapAsMap: true })
  } finally {
    // The document is shared (see `recent`): its scalars go back as written.
    expanded.restore()
  }
  source.tainted = expanded.tainted
  source.fromEnv = expanded.fromEnv
  for (const p of expanded.problems) {
    const { line, col } = lines.linePos(p.offset)
    sources.problems.push({ file, line, column: col, path: formatPath(p.path), message: p.message })
  }
  const contents = doc.contents
  if (contents === null) return
  if (!isMap(contents)) {
    sources.complete = false
    sources.problems.push(locate(source, { path: [], message: 'the file must be a mapping of top-level keys' }))
    return
  }
  const data = oneByteStrings(js) as Record<string, unknown>
  for (const pair of contents.items) {
    const key = oneByte(isScalar(pair.key) ? String(pair.key.value) : String(pair.key))
    if (key === 'include') continue
    const owner = sources.owners.get(key)
    if (owner !== undefined) {
      const first = locate(owner, { path: [key], at: 'key', message: '' })
      sources.problems.push(locate(source, { path: [key], at: 'key', message: `"${key}" is already defined at ${first.file}:${first.line}:${first.column}` }))
      continue
    }
    sources.owners.set(key, source)
    sources.merged[key] = data[key]
  }
  readIncludes(sources, source, data.include, env, [...chain, resolve(file)])
}

function readIncludes (sources: Sources, source: SourceFile, include: unknown, env: Env, chain: string[]): void {
  if (include === undefined || include === null) return
  if (!Array.isArray(include)) {
    sources.problems.push(locate(source, { path: ['include'], message: 'include must be a list of file paths' }))
    return
  }
  include.forEach((entry: unknown, index) => {
    if (typeof entry !== 'string' || entry === '') {
      sources.problems.push(locate(source, { path: ['include', index], message: 'an include entry must be a file path' }))
      return
    }
    const file = isAbsolute(entry) ? entry : join(dirname(source.file), entry)
    const absolute = resolve(file)
    if (chain.includes(absolute)) {
      const cycle = [...chain.slice(chain.indexOf(absolute)), absolute].map((f) => displayName(sources, f))
      sources.problems.push(locate(source, { path: ['include', index], message: `include cycle: ${cycle.join(' -> ')}` }))
    } else if (sources.files.some((f) => resolve(f.file) === absolute)) {
      sources.problems.push(locate(source, { path: ['include', index], message: `${file} is already included` }))
    } else {
      readFile(sources, file, env, chain, { source, index })
    }
  })
}

function displayName (sources: Sources, absolute: string): string {
  return sources.files.find((f) => resolve(f.file) === absolute)?.file ?? absolute
}

/** Places a path problem in the file that defines the path's top-level key. */
export function locateInSources (sources: Sources, problem: PathProblem): ConfigProblem {
  const head = problem.path[0]
  const source = (head === undefined ? undefined : sources.owners.get(String(head))) ?? sources.files[0]
  if (source === undefined) return { file: '', line: 1, column: 1, path: formatPath(problem.path), message: problem.message }
  return locate(source, problem)
}

/** Whether the node a problem points at is a scalar whose `${ENV}` expansion already failed. */
export function isTainted (sources: Sources, problem: PathProblem): boolean {
  const head = problem.path[0]
  const source = head === undefined ? undefined : sources.owners.get(String(head))
  if (source === undefined) return false
  const found = findNode(source.doc, problem.path, problem.at)
  return found.exact && found.node !== undefined && source.tainted.has(found.node)
}

/** The variables the value at `path` came from, or undefined when it was written in the file. */
export function envUsesAt (sources: Sources, path: readonly PathSegment[]): EnvUse[] | undefined {
  const head = path[0]
  const source = head === undefined ? undefined : sources.owners.get(String(head))
  if (source === undefined) return undefined
  const found = findNode(source.doc, path)
  return found.exact && found.node !== undefined ? source.fromEnv.get(found.node) : undefined
}

/** Every value the environment put into the config, with its variable (the files' order). */
export function envValues (sources: Sources): EnvUse[] {
  return sources.files.flatMap((f) => [...f.fromEnv.values()].flat())
}

function locate (source: SourceFile, problem: PathProblem): ConfigProblem {
  const { node } = findNode(source.doc, problem.path, problem.at)
  const offset = node?.range?.[0] ?? 0
  const { line, col } = source.lines.linePos(offset)
  return { file: source.file, line, column: col, path: formatPath(problem.path), message: problem.message }
}

/** The node at `path` (its key node with `at: 'key'`), or the deepest ancestor that exists. */
export function findNode (doc: Document, path: readonly PathSegment[], at?: 'key'): { node: Node | undefined; exact: boolean } {
  let cur: unknown = doc.contents
  let last: Node | undefined = isNode(cur) ? cur : undefined
  for (const [i, seg] of path.entries()) {
    if (isAlias(cur)) cur = cur.resolve(doc)
    const isLast = i === path.length - 1
    if (isMap(cur)) {
      const pair = cur.items.find((p) => (isScalar(p.key) ? String(p.key.value) : String(p.key)) === String(seg))
      if (pair === undefined) return { node: last, exact: false }
      if (isLast && at === 'key') return { node: isNode(pair.key) ? pair.key : last, exact: true }
      // `key:` with no value: point at the key.
      cur = pair.value ?? pair.key
    } else if (isSeq(cur)) {
      cur = cur.items[Number(seg)]
      if (cur === undefined) return { node: last, exact: false }
    } else {
      return { node: last, exact: false }
    }
    if (isNode(cur)) last = cur
  }
  return { node: last, exact: true }
}

function isNode (value: unknown): value is Node {
  return isScalar(value) || isMap(value) || isSeq(value) || isAlias(value)
}
