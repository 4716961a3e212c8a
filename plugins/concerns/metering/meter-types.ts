import type { PriceConfig } from '../../foundation/config/types.js'
import type { MeterSpec } from '../../foundation/operations/compile.js'
import type { EstimateFacts } from './input-estimate.js'
import type { MeteredFeature } from './feature-usage.js'
import type { ChunkFilter } from './usage-chunk-filter.js'
import type { Usage } from './usage.js'
import type { UsagePaths } from '../../foundation/shapes/index.js'

/** What the gateway knows from the request itself. */
export interface RequestFacts {
  /** The parsed JSON body. */
  json?: Record<string, unknown>
  /** Text fields of a multipart body. */
  multipartFields?: Record<string, string>
  /** Seconds of uploaded audio, when the upload's header told. */
  audioSeconds?: number
  /**
   * The quality and size asked for (defaults applied; `auto` left as is), for a model priced per
   * image by both: the answer's own values win; `auto` left unresolved is charged `worst`, the
   * entry the hold counted (the dearest the request allows).
   */
  imageTier?: { quality: string, size: string, worst: { quality: string, size: string } }
}

export interface MeterInput {
  /** The operation's meter, from the compiled operations table (`plan.op.meter`). */
  meter: MeterSpec
  /** Where the answering model's provider reports each token count, when not where the dialect reads it (its operation's `meter.usage`). */
  usagePaths?: UsagePaths | null
  /** Whether the answer was relayed as server-sent events (a hint; the body's first bytes decide). */
  sse: boolean
  request: RequestFacts
  /** The upstream's HTTP status; a non-2xx answer produced nothing billable. Assumed 2xx when absent. */
  status?: number
  /** The answering model's billing unit, when known; it only decides the `reported` label of speech. */
  unit?: PriceConfig['unit']
  /**
   * The gateway asked a chat-completions stream for its usage chunk on the client's behalf: the
   * meter also offers `filter`, which leaves that chunk out as it meters (one walk for both).
   */
  dropUsageEvents?: boolean
  /** What an estimate needs of the answering model (tokenizer, media bound, context, output ceiling). */
  estimate?: EstimateFacts
  /**
   * The features the request used (operations.<name>.features): their uses are read from the
   * answer where it says them, else charged at the worst case the hold counted. Absent or empty
   * for the common request, which keeps the fast path.
   */
  features?: readonly MeteredFeature[]
}

/** Sees the upstream's response bytes as they pass and tells the usage at the end. */
export interface Meter {
  /** Safe to pass as a bare callback (`body.on('data', meter.onChunk)`); never throws. */
  onChunk (chunk: Buffer): void
  /** The usage; never throws, and returns the same answer when called again. */
  finish (): Usage
  /**
   * With `dropUsageEvents`, where the meter can: used instead of onChunk, it meters each chunk
   * and answers the bytes to pass on, without the usage-only event (usage-chunk-filter.ts's
   * rules). end() answers what the stream's end still releases. Never throws.
   */
  readonly filter?: ChunkFilter | undefined
  /** The upstream job id of a job-creating answer or a job poll, once finish() has run. */
  readonly jobId?: string | undefined
  /** A job poll's `status` (`completed`, `failed`, …), once finish() has run. */
  readonly jobStatus?: string | undefined
}
