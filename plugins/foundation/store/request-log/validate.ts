// Shape checks for a request log row. The writer runs them in write(), so a malformed
// row is refused at once instead of entering the queue and failing every batch it is
// in; insertMany runs them again before touching the database.
import { KEY_PREFIX, LEGACY_KEY_PREFIX } from '../../keys/key-format.js'
import type { RequestLogRow, RequestUsage } from './types.js'

const INT64_MAX = 2n ** 63n - 1n
/** 9999-12-31T23:59:59.999Z: inside both backends' timestamp ranges. */
const MAX_TIME_MS = 253_402_300_799_999

export const BILLING_STATUSES: ReadonlySet<string> = new Set(['BILLED', 'NOT_BILLED', 'PENDING', 'UNKNOWN'])

/** Integer-valued usage units; audioSeconds alone may be fractional. */
const INTEGER_UNITS = [
  'inputTokens',
  'outputTokens',
  'cachedInputTokens',
  'images',
  'characters',
  'calls',
  'jobs',
] as const satisfies ReadonlyArray<keyof RequestUsage>

/** A plaintext key in the keyId column is a caller bug that would leak the key. */
export function looksLikeKey (value: string): boolean {
  return value.startsWith(KEY_PREFIX) || value.startsWith(LEGACY_KEY_PREFIX)
}

const isText = (v: unknown): v is string => typeof v === 'string'
const isOptText = (v: unknown): boolean => v === null || typeof v === 'string'
const isMs = (v: unknown): boolean => typeof v === 'number' && Number.isFinite(v) && v >= 0
const isMoney = (v: unknown): boolean => v === null || (typeof v === 'bigint' && v >= 0n && v <= INT64_MAX)

function usageProblem (usage: RequestUsage): string | null {
  if (typeof usage !== 'object') return 'usage must be an object or null'
  for (const unit of INTEGER_UNITS) {
    const v = usage[unit]
    if (!Number.isSafeInteger(v) || v < 0) return `usage.${unit} must be a non-negative integer`
  }
  if (!isMs(usage.audioSeconds)) return 'usage.audioSeconds must be a finite number >= 0'
  for (const unit of ['cacheWriteTokens', 'cacheWrite1hTokens'] as const) {
    const v = usage[unit]
    if (v !== undefined && (!Number.isSafeInteger(v) || v < 0)) return `usage.${unit} must be a non-negative integer`
  }
  if (usage.imageTier !== undefined && (typeof usage.imageTier?.quality !== 'string' || typeof usage.imageTier.size !== 'string' || `${usage.imageTier.quality}${usage.imageTier.size}`.includes('\u0000'))) return 'usage.imageTier must name a quality and a size'
  if (usage.features !== undefined) {
    if (typeof usage.features !== 'object' || usage.features === null) return 'usage.features must be an object'
    for (const [name, f] of Object.entries(usage.features)) {
      if (name === '' || name.includes('\u0000')) return 'usage.features names must be non-empty strings without NUL'
      if (!Number.isSafeInteger(f.uses) || f.uses < 0 || typeof f.reported !== 'boolean') return `usage.features.${name} must have non-negative integer uses and a boolean reported`
      if (!(f.price === null || (typeof f.price === 'string' && !f.price.includes('\u0000')))) return `usage.features.${name}.price must be a string or null`
    }
  }
  return null
}

/** What is wrong with the row, or null when both backends can store it as given. */
export function checkRequestLogRow (row: RequestLogRow): string | null {
  if (typeof row !== 'object' || row === null) return 'row must be an object'
  if (!isText(row.requestId) || row.requestId === '' || row.requestId.includes('\u0000')) {
    return 'requestId must be a non-empty string without NUL'
  }
  if (!isOptText(row.accountId)) return 'accountId must be a string or null'
  if (!isOptText(row.keyId)) return 'keyId must be a string or null'
  if (row.keyId !== null && looksLikeKey(row.keyId)) return 'keyId holds an API key, not a key id'
  if (!isText(row.route) || !isText(row.operation) || !isText(row.outcome)) {
    return 'route, operation and outcome must be strings'
  }
  if (!isOptText(row.requestedModel) || !isOptText(row.answeredModel) || !isOptText(row.errorCode)) {
    return 'requestedModel, answeredModel and errorCode must be strings or null'
  }
  if (!isOptText(row.holdId) || !isOptText(row.postingId)) return 'holdId and postingId must be strings or null'
  if (!isOptText(row.idempotencyKey)) return 'idempotencyKey must be a string or null'
  if (!Number.isInteger(row.status) || row.status < 0 || row.status > 999) return 'status must be an integer in 0..999'
  if (typeof row.stream !== 'boolean') return 'stream must be a boolean'
  if (row.usage !== null) {
    const problem = usageProblem(row.usage)
    if (problem) return problem
  }
  if (row.usageReported !== null && typeof row.usageReported !== 'boolean') return 'usageReported must be a boolean or null'
  if (!isMoney(row.cost) || !isMoney(row.held)) return 'cost and held must be bigints in 0..2^63-1 or null'
  if (row.overage !== null && !(isMoney(row.overage) && row.overage > 0n)) return 'overage must be a bigint in 1..2^63-1 or null'
  if (row.unrecovered !== null && !(isMoney(row.unrecovered) && row.unrecovered > 0n)) return 'unrecovered must be a bigint in 1..2^63-1 or null'
  if (!BILLING_STATUSES.has(row.billingStatus)) return 'billingStatus must be BILLED, NOT_BILLED, PENDING or UNKNOWN'
  if ((row.overheadMs !== null && !isMs(row.overheadMs)) || (row.upstreamMs !== null && !isMs(row.upstreamMs))) {
    return 'overheadMs and upstreamMs must be finite numbers >= 0 or null'
  }
  if (!isMs(row.totalMs)) return 'totalMs must be a finite number >= 0'
  const ms = row.createdAt instanceof Date ? row.createdAt.getTime() : Number.NaN
  if (!(ms >= 0 && ms <= MAX_TIME_MS)) return 'createdAt must be a valid Date between 1970 and 9999'
  return null
}

/** Throws a RangeError naming the first malformed row. */
export function assertRequestLogRows (rows: readonly RequestLogRow[]): void {
  for (const row of rows) {
    const problem = checkRequestLogRow(row)
    if (problem) {
      const id = typeof row?.requestId === 'string' ? row.requestId : '?'
      throw new RangeError(`request log row ${JSON.stringify(id)}: ${problem}`)
    }
  }
}
