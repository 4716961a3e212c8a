// The request log contract: one row per gateway request, written off the hot path by
// RequestLogWriter and read by the admin and console APIs. SQLite and PostgreSQL
// implement it and pass the same contract tests (test/store-request-log*.test.ts).

import type { Usage } from '../../shapes/index.js'

export type BillingStatus = 'BILLED' | 'NOT_BILLED' | 'PENDING' | 'UNKNOWN'

/** The usage units stored as numbers (every unit but the features). */
export type UsageUnit = Exclude<keyof Usage, 'reported' | 'features' | 'cacheWriteTokens' | 'cacheWrite1hTokens' | 'imageTier'>

/**
 * One feature on the receipt: how much it was used, whether the provider said so, and the price
 * the charge used (charge kind and decimal string as gateway.yaml gave it: per_call or per_use
 * price, multiplier factor; none for a feature billed as tokens), so the charge is reproducible
 * from the row alone.
 */
export interface FeatureReceipt {
  uses: number
  reported: boolean
  charge: 'per_call' | 'per_use' | 'multiplier' | 'tokens'
  price: string | null
}

/** What the request consumed, in every billing unit the catalogue knows, and the features it used. */
export type RequestUsage = Pick<Usage, UsageUnit> & Pick<Usage, 'cacheWriteTokens' | 'cacheWrite1hTokens' | 'imageTier'> & {
  /** Absent when the request used no feature. */
  features?: Record<string, FeatureReceipt>
}

/**
 * One request as the gateway answered it. There is deliberately no field that could hold
 * an API key: `keyId` is the key's row id (`key_…`), never the key itself.
 */
export interface RequestLogRow {
  requestId: string
  accountId: string | null
  /** The key's id, never the key. */
  keyId: string | null
  /** e.g. `POST /v1/chat/completions` */
  route: string
  operation: string
  requestedModel: string | null
  answeredModel: string | null
  /** HTTP status sent to the client. */
  status: number
  /** completed | refused | upstream_error | stream_interrupted | client_disconnected */
  outcome: string
  errorCode: string | null
  stream: boolean
  usage: RequestUsage | null
  /** true: usage reported by the upstream; false: estimated by the gateway. */
  usageReported: boolean | null
  /** Posted cost, nano-units. */
  cost: bigint | null
  /** Hold placed before the upstream call, nano-units. */
  held: bigint | null
  holdId: string | null
  postingId: string | null
  /**
   * The part of `cost` above `held`, nano-units: posted all the same (the upstream reported
   * more than the worst case). Null when the charge fit in the hold or nothing was charged.
   */
  overage: bigint | null
  /**
   * The part of the reported cost that the account's bound (wallet floor − tier overdraft) left
   * unposted, nano-units: the operator's loss, not in `cost`. Null when none.
   */
  unrecovered: bigint | null
  billingStatus: BillingStatus
  /** The client's `X-Idempotency-Key` (validated printable ASCII), or null when it sent none. */
  idempotencyKey: string | null
  /** Time spent in the gateway itself. */
  overheadMs: number | null
  upstreamMs: number | null
  totalMs: number
  createdAt: Date
}

export interface RequestLogQuery {
  accountId?: string
  /** Only the requests sent with this `X-Idempotency-Key` (the original and its retries). */
  idempotencyKey?: string
  /** Inclusive lower bound on createdAt. */
  from?: Date
  /** Exclusive upper bound on createdAt. */
  to?: Date
  /** 1..1000 */
  limit: number
  /** `nextBefore` of the previous page. */
  before?: string
}

export interface RequestLogPage {
  /** Newest first (createdAt, then requestId, descending). */
  rows: RequestLogRow[]
  /** Cursor of the next (older) page; null when this page is the last. */
  nextBefore: string | null
}

export interface RequestLogStore {
  /**
   * Durable batched insert of many rows in one statement / transaction: all or none.
   * Duplicate requestId (in the table or within the batch): the first is kept, the rest ignored.
   * Throws RangeError before touching the database when a row is malformed (see checkRequestLogRow).
   */
  insertMany(rows: readonly RequestLogRow[]): Promise<void>
  /** Newest first; throws RangeError on a bad limit, InvalidCursorError (a RangeError) on a bad cursor. */
  list(q: RequestLogQuery): Promise<RequestLogPage>
  get(requestId: string): Promise<RequestLogRow | null>
}
