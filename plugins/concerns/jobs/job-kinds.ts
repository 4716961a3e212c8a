// Provider facts about asynchronous jobs, as data and small pure functions: which namespace an
// operation's jobs live in, where their id sits in an answer, and what their status means.
import type { CompiledOperation } from '../../foundation/operations/index.js'
import type { JobKind } from '../../foundation/store/jobs/types.js'

const JOB_KINDS: ReadonlySet<string> = new Set<JobKind>(['video', 'music', 'operation'])

/**
 * The job kind of an operation: its `job.namespace` in the operations table (a create, its poll
 * and its content agree), when it is a kind whose answers this module knows how to read.
 */
export function jobKindOf (op: CompiledOperation | undefined): JobKind | undefined {
  const ns = op?.job?.namespace
  return ns !== undefined && JOB_KINDS.has(ns) ? ns as JobKind : undefined
}

export type JsonObject = Record<string, unknown>

export function isJsonObject (v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

/** How a job stands, read from one upstream answer about it. */
export interface Observation {
  end: 'running' | 'completed' | 'failed'
  /** The upstream's own word for it (`in_progress`, `completed`, `done`…), for the job row. */
  status: string | null
}

// OpenAI video objects and music jobs say `status`; anything but these two is still running.
const FAILED_STATUSES: ReadonlySet<string> = new Set(['failed', 'cancelled', 'canceled', 'expired'])

/** Video and music jobs: `status`. Operations: `done`, then `error` or `response`. */
export function observe (kind: JobKind, answer: JsonObject): Observation {
  if (kind === 'operation') {
    if (answer.done !== true) return { end: 'running', status: 'running' }
    return isJsonObject(answer.error) ? { end: 'failed', status: 'failed' } : { end: 'completed', status: 'done' }
  }
  const status = typeof answer.status === 'string' ? answer.status : null
  if (status === 'completed') return { end: 'completed', status }
  if (status !== null && FAILED_STATUSES.has(status)) return { end: 'failed', status }
  return { end: 'running', status }
}

// The upstream's ids end up in an upstream path: one segment of these characters, never `.` or
// `..` (an id `..` would climb to the collection and list every tenant's jobs).
const UPSTREAM_SEGMENT = /^[A-Za-z0-9_\-.~:]{1,256}$/
const MAX_OPERATION_SEGMENTS = 8

function safeSegment (s: string): boolean {
  return UPSTREAM_SEGMENT.test(s) && s !== '.' && s !== '..'
}

/** The upstream's id of a create answer (an operation's `name`), when it is one we can poll safely. */
export function upstreamIdOf (kind: JobKind, answer: JsonObject): string | undefined {
  const id = kind === 'operation' ? answer.name : answer.id
  if (typeof id !== 'string') return undefined
  if (kind !== 'operation') return safeSegment(id) ? id : undefined
  const segments = id.split('/')
  return segments.length <= MAX_OPERATION_SEGMENTS && segments.every(safeSegment) ? id : undefined
}

/** The upstream id as it goes into a path template's `{id}`: operation names keep their slashes. */
export function upstreamIdPath (kind: JobKind, upstreamId: string): string {
  return kind === 'operation'
    ? upstreamId.split('/').map(encodeURIComponent).join('/')
    : encodeURIComponent(upstreamId)
}

/** The name a client sees for an operation: the SDK polls `GET {base}/v1beta/{name}`. */
export function operationName (jobId: string): string {
  return `operations/${jobId}`
}

/** The answer with the gateway's job id (or operation name) in place of the upstream's. */
export function withGatewayId (kind: JobKind, answer: JsonObject, jobId: string): JsonObject {
  return kind === 'operation' ? { ...answer, name: operationName(jobId) } : { ...answer, id: jobId }
}
