// configLoader: read gateway.yaml and its includes, expand ${ENV}, validate against
// schemas/, cross-check references (the config's own checks, then each concern's, handed in by
// the composition root: plugins/apps/gateway/config.ts), then freeze. Every problem of every stage
// is collected with its file, line and column before anything is thrown.
import { builtinOperationsRaw } from './builtin-operations.js'
import { crossCheck, type ConfigCheck } from './cross-check.js'
import type { Env, EnvUse } from './expand-env.js'
import { ConfigError, formatPath, type ConfigProblem, type PathProblem, type PathSegment } from './problem.js'
import { describeSchemaErrors } from './schema-errors.js'
import { configHash, deepFreeze } from './snapshot.js'
import { envRedactor } from './redact.js'
import { envUsesAt, envValues, isTainted, locateInSources, readSources } from './sources.js'
import type { GatewayConfig } from './types.js'
import { validateConfig } from './validate.js'

export interface LoadedConfig {
  /** Validated, defaults filled, deep-frozen. */
  config: GatewayConfig
  /** sha256 (hex) of the expanded, merged, defaults-filled config; key order does not count. */
  hash: string
  /** Every file read: the root first, then includes in the order met. */
  files: string[]
  /**
   * Replaces in a text every value of this config that came from the environment (long enough
   * to be a secret) by its `${NAME}`: for a message about this config that is not a located
   * problem (a failure to build it), before it is logged or answered.
   */
  redact: (text: string) => string
  /**
   * What the config leaves out that it should say (a model without its context window, output
   * limit, service tiers or features), located like problems; it loads all the same. Always set
   * by loadConfig (optional for a LoadedConfig built by hand).
   */
  warnings?: ConfigProblem[]
}

/**
 * What the concerns add to loading a config: their checks, run after the config's own
 * cross-checks, and their warnings (what a config that loads leaves unsaid). The composition
 * root's list fills it (CONFIG_CONCERNS, plugins/apps/gateway/config.ts).
 */
export interface ConfigConcerns {
  readonly checks: readonly ConfigCheck[]
  readonly warnings: readonly ConfigCheck[]
}

export interface ConfigLoader {
  /** Loads and validates a config file; throws ConfigError listing every problem. */
  loadConfig: (file: string, env?: Env) => LoadedConfig
  /** Every problem of a config file, in file order then line order; empty when it loads. */
  checkConfig: (file: string, env?: Env) => ConfigProblem[]
}

/** The loader that runs `concerns`' checks and warnings beside the config's own. */
export function configLoader (concerns: ConfigConcerns): ConfigLoader {
  return {
    loadConfig (file: string, env: Env = process.env): LoadedConfig {
      const { problems, config, files, redact, warnings } = analyze(file, env, concerns)
      if (problems.length > 0 || config === undefined) throw new ConfigError(problems)
      return { config: deepFreeze(config), hash: configHash(config), files, redact, warnings }
    },
    checkConfig (file: string, env: Env = process.env): ConfigProblem[] {
      return analyze(file, env, concerns).problems
    }
  }
}

interface Analysis {
  problems: ConfigProblem[]
  config: GatewayConfig | undefined
  files: string[]
  redact: (text: string) => string
  warnings: ConfigProblem[]
}

function analyze (file: string, env: Env, concerns: ConfigConcerns): Analysis {
  const sources = readSources(file, env)
  const files = sources.files.map((f) => f.file)
  const problems = [...sources.problems]
  const redactor = envRedactor(envValues(sources))
  const redactText = (text: string): string => redactor({ path: [], message: text }, undefined).message
  // A file that did not parse leaves the merged config partial: schema errors would be noise.
  if (!sources.complete) return { problems: sortProblems(problems, files), config: undefined, files, redact: redactText, warnings: [] }

  mergeBuiltinOperations(sources.merged)
  const data: unknown = sources.merged
  // No problem echoes a value the environment supplied (it may be a misplaced credential).
  const origin = (path: readonly PathSegment[]): EnvUse[] | undefined => envUsesAt(sources, path)
  const place = (p: PathProblem): ConfigProblem => locateInSources(sources, redactor(p, origin(p.path)))
  const schemaProblems = describeSchemaErrors(validateConfig(data), data, origin)
  const shown = schemaProblems.filter((p) => !isTainted(sources, p))
  problems.push(...shown.map(place))

  // The cross-check reads the config as typed; with schema errors it may meet a wrong shape.
  const config = data as GatewayConfig
  let cross: PathProblem[] = []
  try {
    cross = crossCheck(config, concerns.checks)
  } catch (err) {
    if (schemaProblems.length === 0) throw err
  }
  const covered = schemaProblems.filter((p) => p.keyword !== 'required' && p.path.length > 0).map((p) => formatPath(p.path))
  problems.push(...cross
    .filter((p) => !isCovered(formatPath(p.path), covered) && !isTainted(sources, p))
    .map(place))

  const sorted = sortProblems(problems, files)
  if (sorted.length > 0) return { problems: sorted, config: undefined, files, redact: redactText, warnings: [] }
  const warnings = sortProblems(concerns.warnings.flatMap((warn) => warn(config)).map(place), files)
  return { problems: sorted, config, files, redact: redactText, warnings }
}

/**
 * The built-in operations (config/operations.yaml) under the file's own: an entry of the same
 * name in gateway.yaml replaces the built-in one whole. Done before the schema runs, so the
 * built-in entries get their defaults filled and count in the hash like the operator's. A
 * section that is not a mapping is left for the schema to report.
 */
function mergeBuiltinOperations (merged: Record<string, unknown>): void {
  const own = merged.operations
  if (own !== undefined && own !== null && (typeof own !== 'object' || Array.isArray(own))) return
  merged.operations = { ...builtinOperationsRaw(), ...(own ?? {}) }
}

/** A cross-check problem at or under a value the schema already rejected repeats it. */
function isCovered (path: string, covered: readonly string[]): boolean {
  return covered.some((c) => path === c || path.startsWith(c + '.') || path.startsWith(c + '['))
}

function sortProblems (problems: ConfigProblem[], files: readonly string[]): ConfigProblem[] {
  const order = (p: ConfigProblem): number => {
    const i = files.indexOf(p.file)
    return i < 0 ? files.length : i
  }
  return problems
    .map((p, i) => ({ p, i }))
    .sort((a, b) => order(a.p) - order(b.p) || a.p.line - b.p.line || a.p.column - b.p.column || a.i - b.i)
    .map(({ p }) => p)
}
