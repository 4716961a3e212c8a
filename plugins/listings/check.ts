// Cross-checks of `listings:` a schema cannot express: the family exists, a path is served once
// per method (beside the declared routes too), and a listing told apart by a header stands
// beside one without it. Pure and tolerant of a config that failed the schema.
import { formatPath, type PathProblem, type PathSegment } from '../config/problem.js'
import type { GatewayConfig } from '../config/types.js'

const isString = (value: unknown): value is string => typeof value === 'string'
const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object'
const listOf = (value: unknown): readonly unknown[] => Array.isArray(value) ? value : []
/** Placeholders are normalised: /x/{id} and /x/{model} are the same route to the router. */
const routeKey = (path: string): string => `GET ${path.replace(/\{(model|id)\}/g, '{}')}`

export function checkListings (config: GatewayConfig): PathProblem[] {
  const out: PathProblem[] = []
  const families = isObject(config.families) ? config.families : {}
  // GET paths of the declared routes (their own duplicates are checkRoutes' to report).
  const taken = new Map<string, PathSegment[]>()
  listOf(config.routes).forEach((route, i) => {
    if (!isObject(route) || route.method !== 'GET') return
    const paths: Array<[unknown, PathSegment[]]> = [[route.path, ['routes', i, 'path']]]
    listOf(route.aliases).forEach((alias, j) => { paths.push([alias, ['routes', i, 'aliases', j]]) })
    for (const [path, at] of paths) if (isString(path) && !taken.has(routeKey(path))) taken.set(routeKey(path), at)
  })
  const plain = new Set<string>()
  const entries = listOf(config.listings)
  entries.forEach((l, i) => {
    if (!isObject(l)) return
    if (isString(l.family) && !Object.prototype.hasOwnProperty.call(families, l.family)) {
      out.push({ path: ['listings', i, 'family'], message: `family "${l.family}" is not defined in families` })
    }
    if (!isString(l.path)) return
    const key = routeKey(l.path) + (isString(l.when_header) ? ` ${l.when_header}` : '')
    const first = taken.get(key)
    if (first !== undefined) out.push({ path: ['listings', i, 'path'], message: `GET ${l.path} is already declared at ${formatPath(first)}` })
    else taken.set(key, ['listings', i, 'path'])
    if (!isString(l.when_header)) plain.add(routeKey(l.path))
  })
  entries.forEach((l, i) => {
    if (!isObject(l) || !isString(l.path) || !isString(l.when_header)) return
    const key = routeKey(l.path)
    // A declared GET route of the path would do as the one without the header; a listing must.
    if (!plain.has(key) && !taken.has(key)) out.push({ path: ['listings', i, 'when_header'], message: `GET ${l.path} needs a listing without when_header on the same path, served to requests without the header` })
  })
  return out
}
