// compileOperations: the one table of facts about operations (meter, job role, usage chunk,
// worst-case bounds, billable features), compiled from the config once and frozen.
// Request-time code reads a route plan's `op`, never an operation's name.
import type { GatewayConfig, JobRole, OperationConfig, TokenDialectName } from '../config/types.js'
import { isObject } from '../config/problem.js'
import type { OperationBounds, ParamPath } from '../shapes/index.js'
import { builtinOperations } from '../config/index.js'
import { compileOperationFeatures, type OperationFeatures } from './feature-compile.js'

/** How an answer of the operation is metered. */
export type MeterSpec =
  | { readonly kind: 'tokens', readonly dialect: TokenDialectName }
  | { readonly kind: 'images', readonly perCall: boolean }
  | { readonly kind: 'transcription' | 'speech' | 'call' | 'job' | 'job_poll' | 'none' }

export interface OperationJob {
  readonly role: JobRole
  /** Upstream id space; a job's hold is recorded and found again as `<namespace>:<id>`. */
  readonly namespace: string
}

export interface CompiledOperation {
  readonly name: string
  readonly meter: MeterSpec
  readonly job: OperationJob | null
  readonly usageChunk: boolean
  readonly videoParts: boolean
  readonly bounds: OperationBounds
  /** Body features and query values the provider charges for, and the closed lists (tools). */
  readonly features: OperationFeatures
}

export interface CompiledOperations {
  get (name: string): CompiledOperation | undefined
  list (): readonly CompiledOperation[]
}

/** An operation's entries: the built-in ones, then the config's (which replace them whole or add). */
export function operationEntries (config: Pick<GatewayConfig, 'operations'>): Record<string, OperationConfig> {
  return { ...builtinOperations(), ...(config.operations ?? {}) }
}

/** The operations table the models are checked against: the loaded one (built-ins merged in), else the built-ins. */
export function operationsTable (config: Pick<GatewayConfig, 'operations'>): Record<string, unknown> {
  return isObject(config.operations) && !Array.isArray(config.operations) ? config.operations : operationEntries(config)
}

/** Whether a meter bills anything: an operation metered `none` (or not at all) is served free. */
export function billsSomething (meter: MeterSpec): boolean {
  return meter.kind !== 'none' && meter.kind !== 'job_poll'
}

function meterOf (name: string, entry: OperationConfig): MeterSpec {
  const m = entry.meter
  switch (m.kind) {
    case 'tokens':
      // The cross-check refuses a tokens meter without a dialect; a config built by hand is a bug.
      if (m.dialect === undefined) throw new Error(`operation ${name}: meter kind tokens needs a dialect`)
      return Object.freeze({ kind: 'tokens', dialect: m.dialect })
    case 'images':
      return Object.freeze({ kind: 'images', perCall: m.per_call === true })
    default:
      return Object.freeze({ kind: m.kind })
  }
}

function paths (names: readonly string[] | undefined): readonly ParamPath[] {
  return Object.freeze((names ?? []).map((name) => Object.freeze({ name, keys: Object.freeze(name.split('.')) })))
}

export function compileOperation (name: string, entry: OperationConfig): CompiledOperation {
  return Object.freeze({
    name,
    meter: meterOf(name, entry),
    job: entry.job === undefined ? null : Object.freeze({ role: entry.job.role, namespace: entry.job.namespace }),
    usageChunk: entry.usage_chunk === true,
    videoParts: entry.video_parts !== false,
    bounds: Object.freeze({
      maxTokens: paths(entry.bounds?.max_tokens),
      count: paths(entry.bounds?.count),
      countIsImages: entry.bounds?.count_is_images === true,
      jobUnits: Object.freeze((entry.bounds?.job_units ?? []).map((u) => Object.freeze({ path: paths([u.param])[0] as ParamPath, default: u.default })))
    }),
    features: compileOperationFeatures(entry)
  })
}

/** Pure: config in, frozen table out (the built-in entries included). */
export function compileOperations (config: Pick<GatewayConfig, 'operations'>): CompiledOperations {
  const byName = new Map<string, CompiledOperation>()
  for (const [name, entry] of Object.entries(operationEntries(config))) byName.set(name, compileOperation(name, entry))
  const all = Object.freeze([...byName.values()])
  return {
    get: (name) => byName.get(name),
    list: () => all
  }
}
