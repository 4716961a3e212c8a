import type { BillingStatus } from '../errors/index.js'
import type { CompiledModel } from '../models/catalogue.js'
import type { Usage } from '../pricing/usage-types.js'
import type { ParsedBody } from '../request/body.js'
import type { RoutePlan } from '../routes/compile.js'

export interface Outcome {
  /** How the exchange ended for the gateway. */
  kind: 'completed' | 'refused' | 'upstream_error' | 'stream_interrupted' | 'client_disconnected'
  httpStatus: number
  errorCode: string | null
  /** The model that answered (differs from the requested one after a fallback). */
  answeredModel: CompiledModel | null
  upstreamMs: number | null
  /** What the upstream produced, metered from its answer (null when nothing was answered). */
  usage: Usage | null
  /** Gateway time before the upstream was called plus after its headers came back, ms. */
  overheadMs: number | null
  /** The upstream job a job-creating answer or a job poll named, and the status a poll read. */
  job?: { id: string | undefined, status: string | undefined }
}

/** Per-request state passed along the stage chain. Plugins keep their own data in `slots`. */
export interface RequestContext {
  readonly requestId: string
  /** process.hrtime.bigint() when the request arrived. */
  readonly startedAt: bigint
  readonly plan: RoutePlan
  readonly body: ParsedBody | undefined
  readonly headers: Readonly<Record<string, string | string[] | undefined>>
  /** Raw (still encoded) path parameters: `model` for `{model}` routes, `id` for job routes. */
  readonly params: Readonly<{ model?: string, id?: string }>
  /** Query string including its leading `?`, or ''. */
  readonly query: string
  requestedModelId: string | null
  /** The model the next upstream attempt is for; stages marked perModel see each fallback. */
  model: CompiledModel | null
  billing: BillingStatus
  readonly slots: Map<string, unknown>
}
