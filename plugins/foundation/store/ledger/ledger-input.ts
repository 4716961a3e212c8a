// Input checks shared by both backends: a bad amount is a caller bug and throws before
// anything touches the database (so one bad call can never fail a whole PostgreSQL batch).
import type { CreditKind, EntryKind, HoldInput } from './types.js'

/** Largest amount one operation may move: 10^9 currency units in nano-units. */
export const MAX_LEDGER_AMOUNT = 10n ** 18n
/** Reaper statements close at most this many holds each. */
export const REAP_CHUNK = 1000
/** Settled charges carry this posting-id prefix; credits may not use it. */
export const CHARGE_POSTING_PREFIX = 'post:'

function checkAmount (name: string, value: bigint, min: bigint): bigint {
  if (typeof value !== 'bigint' || value < min || value > MAX_LEDGER_AMOUNT) {
    throw new RangeError(`${name} must be a bigint in ${min}..${MAX_LEDGER_AMOUNT} nano-units`)
  }
  return value
}

function checkId (name: string, value: string): string {
  if (typeof value !== 'string' || value === '') throw new RangeError(`${name} must be a non-empty string`)
  return value
}

export function checkCredit (input: {
  accountId: string
  amount: bigint
  kind: CreditKind
  postingId: string
}): void {
  checkId('accountId', input.accountId)
  checkAmount('credit amount', input.amount, 1n)
  if (input.kind !== 'topup' && input.kind !== 'grant') throw new RangeError('credit kind must be topup or grant')
  checkId('postingId', input.postingId)
  if (input.postingId.startsWith(CHARGE_POSTING_PREFIX)) {
    throw new RangeError(`postingId prefix ${CHARGE_POSTING_PREFIX} is reserved for settled holds`)
  }
}

export function checkHold (input: HoldInput): void {
  checkId('accountId', input.accountId)
  if (input.caps !== undefined) {
    checkId('caps.keyId', input.caps.keyId)
    if (!Number.isSafeInteger(input.caps.images) || input.caps.images < 0) throw new RangeError('caps.images must be a non-negative integer')
  }
  checkAmount('hold amount', input.amount, 0n)
  if (typeof input.floor !== 'bigint' || input.floor < -MAX_LEDGER_AMOUNT || input.floor > MAX_LEDGER_AMOUNT) {
    throw new RangeError(`floor must be a bigint in ±${MAX_LEDGER_AMOUNT} nano-units`)
  }
  checkId('requestId', input.requestId)
  if (!Number.isSafeInteger(input.ttlMs) || input.ttlMs <= 0) throw new RangeError('ttlMs must be a positive integer')
}

export function checkSettle (input: { holdId: string; amount: bigint; requestId: string }): void {
  checkId('holdId', input.holdId)
  checkAmount('settle amount', input.amount, 0n)
  checkId('requestId', input.requestId)
}

/** A credit retried with the same postingId must be the same credit. */
export function checkSameCredit (
  postingId: string,
  existing: { accountId: string; amount: bigint; kind: string },
  input: { accountId: string; amount: bigint; kind: CreditKind }
): void {
  if (existing.accountId !== input.accountId || existing.amount !== input.amount || existing.kind !== input.kind) {
    throw new PostingConflictError(postingId, existing)
  }
}

/**
 * A credit whose postingId was already used for a different credit: the caller reused an
 * idempotency key, so callers (the admin API) tell it apart by class, never by its message.
 */
export class PostingConflictError extends RangeError {
  override readonly name = 'PostingConflictError'
  constructor (readonly postingId: string, existing: { accountId: string; amount: bigint; kind: string }) {
    super(`postingId ${postingId} was already used for a different posting (${existing.kind} ${existing.amount} on ${existing.accountId})`)
  }
}

export function parseEntryKind (value: string): EntryKind {
  if (value === 'topup' || value === 'grant' || value === 'charge' || value === 'adjustment') return value
  throw new Error(`unexpected ledger entry kind in database: ${value}`)
}

export class UnknownHoldError extends RangeError {
  override readonly name = 'UnknownHoldError'
  constructor (readonly holdId: string) {
    super(`unknown hold ${holdId}`)
  }
}

export class UnknownAccountError extends RangeError {
  override readonly name = 'UnknownAccountError'
  constructor (readonly accountId: string) {
    super(`unknown account ${accountId}`)
  }
}

export function checkRenew (holdId: string, ttlMs: number): void {
  checkId('holdId', holdId)
  if (!Number.isSafeInteger(ttlMs) || ttlMs <= 0) throw new RangeError('ttlMs must be a positive integer')
}

export function checkHoldId (holdId: string): string {
  return checkId('holdId', holdId)
}
