// Checks a schema cannot express: names that refer to other entries, uniqueness across
// entries, fallback graphs. Pure: config in, problems (with config paths) out; the loader
// turns paths into YAML lines. Written to tolerate a config that failed the schema, since
// the loader still runs it then to report every problem at once.
//
// These are the config's own checks; each concern checks its own sections (operations, pricing,
// admission, aliases, listings), and the composition root hands those checks to the loader
// (CONFIG_CONCERNS, plugins/apps/gateway/config.ts), so this bottom layer imports no concern.
import type { GatewayConfig, ModelConfig } from './types.js'
import { formatPath, isString, type PathProblem, type PathSegment } from './problem.js'

export type CrossProblem = PathProblem

/** One concern's check of a loaded config: problems with their config paths. */
export type ConfigCheck = (config: GatewayConfig) => PathProblem[]

/** The config's own cross-checks, then each of `concerns` in order. */
export function crossCheck (config: GatewayConfig, concerns: readonly ConfigCheck[] = []): CrossProblem[] {
  return [
    ...checkPools(config),
    ...checkRoutes(config),
    ...checkModels(config),
    ...checkFallbacks(config),
    ...checkLimits(config),
    ...checkErrors(config),
    ...checkJobs(config),
    ...checkForwarding(config),
    ...concerns.flatMap((check) => check(config))
  ]
}

/**
 * A job's hold must outlive the job: past wallet.job_hold_ttl_ms the reaper releases it, and a
 * success observed later would post nothing. The watcher expires jobs at jobs.max_age_ms, so
 * that must come first.
 */
function checkJobs (config: GatewayConfig): CrossProblem[] {
  const maxAge = config.jobs?.max_age_ms
  const ttl = config.wallet?.job_hold_ttl_ms
  if (typeof maxAge !== 'number' || typeof ttl !== 'number' || maxAge < ttl) return []
  return [{ path: ['jobs', 'max_age_ms'], message: `must be below wallet.job_hold_ttl_ms (${ttl}): a job's hold would expire before the job` }]
}

const has = (record: object | undefined, key: string): boolean =>
  record !== undefined && record !== null && Object.prototype.hasOwnProperty.call(record, key)

const list = <T>(value: readonly T[] | undefined): readonly T[] => Array.isArray(value) ? value : []

/** Entries that are objects, with their index; a mis-shaped entry is the schema's to report. */
const entries = <T>(value: readonly T[] | undefined): Array<[T, number]> =>
  list(value).flatMap((item, i): Array<[T, number]> => item !== null && typeof item === 'object' ? [[item, i]] : [])

const objectOr = (value: unknown): object => value !== null && typeof value === 'object' ? value : {}

function checkPools (config: GatewayConfig): CrossProblem[] {
  const out: CrossProblem[] = []
  for (const [pool, members] of Object.entries(config.pools ?? {})) {
    for (const [member, i] of entries(members)) {
      if (isString(member.provider) && !has(config.providers, member.provider)) {
        out.push({ path: ['pools', pool, i, 'provider'], message: `provider "${member.provider}" is not defined in providers` })
      }
    }
  }
  return out
}

function checkRoutes (config: GatewayConfig): CrossProblem[] {
  const out: CrossProblem[] = []
  // Placeholders are normalised: /x/{id} and /x/{model} are the same route to the router.
  const seen = new Map<string, PathSegment[]>()
  for (const [route, i] of entries(config.routes)) {
    if (isString(route.family) && !has(config.families, route.family)) {
      out.push({ path: ['routes', i, 'family'], message: `family "${route.family}" is not defined in families` })
    }
    const pool = route.upstream?.pool
    if (isString(pool) && !has(config.pools, pool)) {
      out.push({ path: ['routes', i, 'upstream', 'pool'], message: `pool "${pool}" is not defined in pools` })
    }
    const paths: Array<[string, PathSegment[]]> = [[route.path, ['routes', i, 'path']]]
    list(route.aliases).forEach((alias, j) => { paths.push([alias, ['routes', i, 'aliases', j]]) })
    for (const [path, at] of paths) {
      if (!isString(path)) continue
      const key = `${route.method} ${path.replace(/\{(model|id)\}/g, '{}')}`
      const first = seen.get(key)
      if (first === undefined) seen.set(key, at)
      else out.push({ path: at, message: `${route.method} ${path} is already declared at ${formatPath(first)}` })
    }
  }
  return out
}

function checkModels (config: GatewayConfig): CrossProblem[] {
  const out: CrossProblem[] = []
  const routed = new Set(entries(config.routes).map(([r]) => r.operation))
  const ids = new Map<string, number>()
  for (const [model, i] of entries(config.models)) {
    const first = isString(model.id) ? ids.get(model.id) : undefined
    if (first === undefined) { if (isString(model.id)) ids.set(model.id, i) } else out.push({ path: ['models', i, 'id'], message: `duplicate model id "${model.id}" (first at models[${first}])` })
    if (isString(model.pool) && !has(config.pools, model.pool)) {
      out.push({ path: ['models', i, 'pool'], message: `pool "${model.pool}" is not defined in pools` })
    }
    for (const [operation, entry] of Object.entries(objectOr(model.operations))) {
      if (!routed.has(operation)) {
        out.push({ path: ['models', i, 'operations', operation], at: 'key', message: `operation "${operation}" is not declared by any route` })
      }
      // Without a limit to cap at, the flag would silently do nothing.
      if ((entry as { cap_output_tokens?: unknown } | null)?.cap_output_tokens === true && model.max_output_tokens === undefined) {
        out.push({ path: ['models', i, 'operations', operation, 'cap_output_tokens'], message: 'cap_output_tokens needs the model\'s max_output_tokens' })
      }
    }
  }
  return out
}

function checkFallbacks (config: GatewayConfig): CrossProblem[] {
  const out: CrossProblem[] = []
  const models = entries(config.models)
  const byId = new Map(models.map(([m, i]) => [m.id, { model: m, index: i }] as const))
  for (const [model, i] of models) {
    list(model.fallbacks).forEach((id, j) => {
      if (!isString(id)) return
      const path = ['models', i, 'fallbacks', j]
      const target = byId.get(id)
      if (id === model.id) {
        out.push({ path, message: `model "${id}" names itself as a fallback` })
      } else if (target === undefined) {
        out.push({ path, message: `fallback "${id}" is not a model in the catalogue` })
      } else if (target.model.status === 'retired') {
        out.push({ path, message: `fallback "${id}" is retired and can never answer` })
      } else {
        const theirs = new Set(Object.keys(objectOr(target.model.operations)))
        const missing = Object.keys(objectOr(model.operations)).filter((op) => !theirs.has(op))
        if (missing.length > 0) {
          out.push({ path, message: `fallback "${id}" does not serve ${missing.join(', ')}, which "${model.id}" serves` })
        }
      }
    })
  }
  return [...out, ...findCycles(models)]
}

/** Each fallback cycle once, reported at the edge that closes it. */
function findCycles (models: ReadonlyArray<[ModelConfig, number]>): CrossProblem[] {
  const out: CrossProblem[] = []
  const byId = new Map(models.filter(([m]) => isString(m.id)).map(([m, i]) => [m.id, { model: m, index: i }] as const))
  const state = new Map<string, 'open' | 'done'>()
  const stack: string[] = []
  const reported = new Set<string>()
  const visit = (id: string): void => {
    state.set(id, 'open')
    stack.push(id)
    const entry = byId.get(id)
    list(entry?.model.fallbacks).forEach((next, j) => {
      if (entry === undefined || !isString(next) || next === id || !byId.has(next)) return
      if (state.get(next) === 'open') {
        const cycle = [...stack.slice(stack.indexOf(next)), next]
        const key = [...new Set(cycle)].sort().join(' ')
        if (!reported.has(key)) {
          reported.add(key)
          out.push({ path: ['models', entry.index, 'fallbacks', j], message: `fallback cycle: ${cycle.join(' -> ')}` })
        }
      } else if (state.get(next) === undefined) {
        visit(next)
      }
    })
    stack.pop()
    state.set(id, 'done')
  }
  for (const id of byId.keys()) if (state.get(id) === undefined) visit(id)
  return out
}

function checkLimits (config: GatewayConfig): CrossProblem[] {
  const out: CrossProblem[] = []
  const tier = config.limits?.default_tier
  if (isString(tier) && !has(config.limits.tiers, tier)) out.push({ path: ['limits', 'default_tier'], message: `tier "${tier}" is not defined in limits.tiers` })
  const { stream_lease_ttl_ms: ttl, stream_lease_renew_ms: renew } = config.limits ?? {}
  if (typeof ttl === 'number' && typeof renew === 'number' && renew >= ttl) {
    out.push({ path: ['limits', 'stream_lease_renew_ms'], message: `must be below stream_lease_ttl_ms (${ttl}), or leases expire between renewals` })
  }
  return out
}

/**
 * A client's API key must never reach a provider: every key header is stripped, and no
 * provider allow-list names a key header, a stripped header or the `key` query parameter.
 */
function checkForwarding (config: GatewayConfig): CrossProblem[] {
  const out: CrossProblem[] = []
  const keyHeaders = new Set<string>()
  const strip = new Set(list(config.auth?.strip_headers).filter(isString).map((h) => h.toLowerCase()))
  for (const [header, i] of entries(config.auth?.headers)) {
    if (!isString(header.name)) continue
    const name = header.name.toLowerCase()
    keyHeaders.add(name)
    if (!strip.has(name)) out.push({ path: ['auth', 'headers', i, 'name'], message: `key header "${name}" is not in auth.strip_headers, so a client's key could go upstream` })
  }
  for (const [provider, p] of Object.entries(config.providers ?? {})) {
    if (p === null || typeof p !== 'object') continue
    list(p.allow_request_headers).forEach((h, j) => {
      if (!isString(h)) return
      const name = h.toLowerCase()
      const path = ['providers', provider, 'allow_request_headers', j]
      if (keyHeaders.has(name)) out.push({ path, message: `"${name}" carries client API keys (auth.headers) and must never be forwarded` })
      else if (strip.has(name)) out.push({ path, message: `"${name}" is in auth.strip_headers and must never be forwarded` })
    })
    list(p.allow_query_params).forEach((q, j) => {
      if (isString(q) && q.toLowerCase() === 'key') out.push({ path: ['providers', provider, 'allow_query_params', j], message: '"key" carries API keys and must never be forwarded' })
    })
  }
  return out
}

function checkErrors (config: GatewayConfig): CrossProblem[] {
  const out: CrossProblem[] = []
  const catalogue = entries(config.errors?.catalogue)
  const codes = new Map<string, number>()
  const references = new Map<string, number>()
  const aliases = new Map<string, number>()
  for (const [entry, i] of catalogue) {
    const firstCode = isString(entry.code) ? codes.get(entry.code) : undefined
    if (firstCode === undefined) { if (isString(entry.code)) codes.set(entry.code, i) } else out.push({ path: ['errors', 'catalogue', i, 'code'], message: `duplicate error code ${entry.code} (first at errors.catalogue[${firstCode}])` })
    const firstRef = isString(entry.reference) ? references.get(entry.reference) : undefined
    if (firstRef === undefined) { if (isString(entry.reference)) references.set(entry.reference, i) } else out.push({ path: ['errors', 'catalogue', i, 'reference'], message: `duplicate reference ${entry.reference} (first at errors.catalogue[${firstRef}])` })
  }
  for (const [entry, i] of catalogue) {
    list(entry.aliases).forEach((alias, j) => {
      if (!isString(alias) || alias === entry.code) return
      const path = ['errors', 'catalogue', i, 'aliases', j]
      const owner = codes.get(alias)
      const firstAlias = aliases.get(alias)
      if (owner !== undefined) {
        out.push({ path, message: `alias ${alias} clashes with the code of errors.catalogue[${owner}]` })
      } else if (firstAlias !== undefined) {
        out.push({ path, message: `alias ${alias} is already an alias of errors.catalogue[${firstAlias}]` })
      } else {
        aliases.set(alias, i)
      }
    })
  }
  return out
}
