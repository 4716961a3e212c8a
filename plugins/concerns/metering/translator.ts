// What an operation does to a call on its way up and to the answer on its way back (Envoy AI
// Gateway's translator): the request edits, the meter, and for an asynchronous operation where
// the call goes and who writes its answer. The upstream plugin looks one up per request
// (`TranslatorFor`) and keeps the rest to itself (pools, retries, the relay); the composition
// root wires the lookup: `passthrough` (passthrough.ts) for every operation, jobs' own for job
// creates, polls and downloads. So upstream and jobs need not know each other.
import type { FastifyReply } from 'fastify'
import type { Readable } from 'node:stream'
import type { CompiledOperation } from '../../foundation/operations/compile.js'
import type { RequestContext } from '../../foundation/pipeline/context.js'
import type { Meter } from './meter-types.js'
import type { Usage } from './usage.js'
import type { CompiledModel } from '../../foundation/shapes/index.js'

/** The body an upstream call sends, and whether the client's stream must lose the usage chunk the gateway asked for. */
export interface UpstreamBody {
  body: Buffer | undefined
  /** The gateway asked for the usage chunk the client did not: drop it from the client's stream. */
  filter: boolean
}

/** A call that does not go to the model's pool: the provider that runs a job, and the job's path there (no query). */
export interface UpstreamTarget {
  provider: string
  path: string
}

/** An upstream answer handed whole to a translator, before the client has seen any of it. */
export interface AnswerInput {
  ctx: RequestContext
  reply: FastifyReply
  status: number
  /** The client's response headers (upstream's, filtered, plus the gateway's own). */
  headers: Record<string, string | string[]>
  body: Readable
  /** The provider that answered (a job is polled there). */
  provider: string
  answered: CompiledModel | null
}

/** What the settle and the request log are told about an answer a translator wrote. */
export interface Answered {
  usage: Usage | null
  /** The gateway's job id and the upstream's status word. */
  job?: { id: string, status: string | undefined }
}

export interface Translator {
  /**
   * The request edits: the body sent to `model`'s upstream (null: a route without a model, sent
   * as it came) — the model name, the model's body rules, the hosted tools' caps, the usage chunk
   * asked for on a stream. Throws a GatewayError (nothing sent, nothing billed) for a body it
   * cannot edit safely.
   */
  requestBody (ctx: RequestContext, model: CompiledModel | null): UpstreamBody
  /** The meter of an answer relayed as it streams (`dropUsageEvents`: also the filter of the chunk asked for). */
  meter (ctx: RequestContext, model: CompiledModel | null, sse: boolean, status: number, dropUsageEvents: boolean): Meter
  /** Where the call goes instead of the model's pool; null (or absent): the pool. Throws MODEL_UNAVAILABLE when that provider is gone. */
  readonly target?: ((ctx: RequestContext) => UpstreamTarget | null) | undefined
  /** Reads the whole (small) answer and writes the client's itself, instead of the relay: a job create or poll. */
  readonly answer?: ((input: AnswerInput) => Promise<Answered>) | undefined
}

/** The translator of an operation; called once per request, so it must only pick (nothing compiled per call). */
export type TranslatorFor = (op: CompiledOperation) => Translator
