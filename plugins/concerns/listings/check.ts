// Cross-checks of the families' `listings` a schema cannot express: a path is served once per
// method (beside the declared routes too), and a listing told apart by a header stands beside a
// route of the same path without it. Pure and tolerant of a config that failed the schema.
import { formatPath, isObject, isString, listOf, type PathProblem, type PathSegment } from '../../foundation/config/problem.js'
import type { GatewayConfig } from '../../foundation/config/types.js'

/** Placeholders are normalised: /x/{id} and /x/{model} are the same route to the router. */
const routeKey = (path: string): string => `GET ${path.replace(/\{(model|id)\}/g, '{}')}`

export function checkListings (config: GatewayConfig): PathProblem[] {
  const out: PathProblem[] = []
  // GET paths of the declared routes (their own duplicates are checkRoutes' to report).
  const taken = new Map<string, PathSegment[]>()
  listOf(config.routes).forEach((route, i) => {
    if (!isObject(route) || route.method !== 'GET') return
    const paths: Array<[unknown, PathSegment[]]> = [[route.path, ['routes', i, 'path']]]
    listOf(route.aliases).forEach((alias, j) => { paths.push([alias, ['routes', i, 'aliases', j]]) })
    for (const [path, at] of paths) if (isString(path) && !taken.has(routeKey(path))) taken.set(routeKey(path), at)
  })
  const listings = Object.entries(isObject(config.families) ? config.families : {}).flatMap(([family, f]) =>
    listOf(isObject(f) ? f.listings : undefined).flatMap((l, i) => isObject(l) && isString(l.path) ? [{ l, path: l.path, at: ['families', family, 'listings', i] as PathSegment[] }] : []))
  for (const { l, path, at } of listings) {
    const key = routeKey(path) + (isString(l.when_header) ? ` ${l.when_header}` : '')
    const first = taken.get(key)
    if (first !== undefined) out.push({ path: [...at, 'path'], message: `GET ${path} is already declared at ${formatPath(first)}` })
    else taken.set(key, [...at, 'path'])
  }
  for (const { l, path, at } of listings) {
    if (isString(l.when_header) && !taken.has(routeKey(path))) {
      out.push({ path: [...at, 'when_header'], message: `GET ${path} needs a listing or GET route without when_header on the same path, served to requests without the header` })
    }
  }
  return out
}
