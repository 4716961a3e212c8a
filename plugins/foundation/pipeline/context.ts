import type { BillingStatus } from '../errors/index.js'
import type { RoutePlan } from '../routes/compile.js'
import type { CompiledModel, ParsedBody, Usage } from '../shapes/index.js'

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

/**
 * What concerns keep per request, one typed field each. The host declares none of them: a
 * concern adds its own field by augmenting this interface, the way Fastify's decorators are
 * typed, e.g. in plugins/concerns/auth:
 *
 *   declare module '../../foundation/pipeline/context.js' { interface RequestState { auth: CachedKey } }
 *
 * Fields are optional at run time (`ctx.state` starts empty), so reads see `T | undefined`.
 */
export interface RequestState {}

/** Per-request state passed along the phases. */
export interface RequestContext {
  readonly requestId: string
  /** process.hrtime.bigint() when the request arrived (its headers, before the body). */
  readonly startedAt: bigint
  /**
   * process.hrtime.bigint() once the body had been read and resolve began: the gateway's own
   * time before forwarding is counted from here, not the client's upload.
   */
  handledAt: bigint
  readonly plan: RoutePlan
  /** The parsed body; undefined until the body was read (after admit), or when there is none. */
  body: ParsedBody | undefined
  readonly headers: Readonly<Record<string, string | string[] | undefined>>
  /** Raw (still encoded) path parameters: `model` for `{model}` routes, `id` for job routes. */
  readonly params: Readonly<{ model?: string, id?: string }>
  /** Query string including its leading `?`, or ''. */
  readonly query: string
  requestedModelId: string | null
  /** The model the next upstream attempt is for; the per-model phases see each fallback. */
  model: CompiledModel | null
  billing: BillingStatus
  /** Each concern's own typed field (see RequestState). */
  readonly state: Partial<RequestState>
}

/**
 * Whether the answer streams: a route declared `response: sse` (`:streamGenerateContent`)
 * streams whatever its body says; elsewhere a JSON body's `stream: true` asks for it.
 */
export function answersAsStream (ctx: RequestContext): boolean {
  return ctx.plan.response === 'sse' || (ctx.body?.kind === 'json' && ctx.body.json.stream === true)
}
