import type { CapRefusal, HoldCaps } from './caps.js'
// The wallet ledger contract. A billable request places a hold for its worst-case
// cost, then settles: the actual cost is posted and the rest of the hold released.
//
// The account is bounded: its balance never goes below its bound (the `floor` its holds are
// given: wallet.floor − the overdraft of its tier), whatever the concurrency and however many
// stores share the database. A hold is admitted only when balance − held − amount stays at or
// above the bound. A settle posts the cost asked for up to what the account can pay without
// touching its other open holds' reservations: with balance B and held H (this hold h
// included) just before it, at most B − (H − h) − bound, which is never less than h. A cost
// above the hold that fits is posted in full (its `overage`); what does not fit is the
// settle's `unrecovered` part, recorded and not posted (the operator's loss), and the wallet
// then refuses every hold until a top-up credit (not a grant) clears it.
//
// The bound an account's settles honour is the one its latest admitted hold was checked
// against (kept on the wallet row): a new overdraft or floor takes effect at the next hold
// admitted, and a bound raised by that hold still leaves every open hold fully backed.
// A hold may carry the key's caps (caps.ts): they are checked and reserved in the hold's own
// transaction, and given back (or moved to used) by the settle, release or expiry.
// SQLite and PostgreSQL implement it and pass the same contract tests (test/store-ledger*.test.ts).

export interface WalletState {
  accountId: string
  balance: bigint
  held: bigint
  /** balance - held */
  available: bigint
  /**
   * When a settle last left part of a cost unrecovered; while set, every hold is refused
   * ('topup_required') until a top-up credit. Null otherwise.
   */
  unrecoveredAt: Date | null
}

export type HoldResult =
  | { ok: true; holdId: string; expiresAt: Date }
  | { ok: false; error: 'insufficient_funds' }
  /** A settle of this account left a cost unrecovered since its last top-up: no hold, not even of 0. */
  | { ok: false; error: 'topup_required' }
  /** A cap of the key (input.caps) would be exceeded: nothing was held or reserved. */
  | { ok: false; error: 'cap'; cap: CapRefusal }

export interface HoldInput {
  accountId: string
  amount: bigint
  /**
   * The account's bound: the lowest balance it may reach (wallet.floor − the overdraft of its
   * tier). The hold is checked against it, and once admitted it becomes the bound of the
   * account's settles.
   */
  floor: bigint
  requestId: string
  ttlMs: number
  /** The key's caps; absent for keys without any (they cost no extra statement). */
  caps?: HoldCaps | undefined
}

/** One usage bucket of a key: `used` is posted spend (or images), `held` open reservations. */
export interface KeyUsageRow {
  kind: 'total' | 'spend' | 'images'
  period: string
  used: bigint
  held: bigint
}

export type CreditKind = 'topup' | 'grant'
export type EntryKind = CreditKind | 'charge' | 'adjustment'

export interface LedgerEntry {
  id: string
  accountId: string
  /** Positive for a credit, negative (or zero) for a charge. */
  amount: bigint
  kind: EntryKind
  postingId: string
  holdId: string | null
  requestId: string | null
  note: string | null
  /** Charges only: the part of the charge above its hold (positive), null when it fit. */
  overage: bigint | null
  /**
   * Charges only: the part of the cost asked for that the account's bound left unposted
   * (positive; not in `amount`), null when the whole cost was posted.
   */
  unrecovered: bigint | null
  createdAt: Date
}

export interface OpenHold {
  id: string
  amount: bigint
  expiresAt: Date
  requestId: string
}

export interface RenewResult {
  /** False when the hold was already closed or its expiry had passed: nothing changed. */
  renewed: boolean
  /** The hold's expiry after the call (null when it was not renewed). */
  expiresAt: Date | null
}

export interface SettleResult {
  /**
   * Charged by this call: the amount asked for, up to the account's bound (see above); 0 when
   * the hold had expired or was already closed. posted + unrecovered = the amount asked for,
   * whenever the hold posted.
   */
  posted: bigint
  /** Returned to the available balance by this call: the hold less the part the charge used. */
  released: bigint
  /** The part of `posted` above the hold (0 when the charge fit in it): recovered all the same. */
  overage: bigint
  /** The part of the amount asked for that was not posted, the bound being reached (0 when none). */
  unrecovered: bigint
  /** The hold was already closed (posted, released or expired) before this call: nothing changed. */
  duplicate: boolean
}

export interface LedgerStore {
  /**
   * Credits the wallet (creates it on first use). A top-up (not a grant) also clears the
   * wallet's unrecoveredAt, so holds are admitted again. `postingId` is unique: a retried credit with
   * the same id changes nothing and answers duplicate: true. Reusing a postingId for a different
   * account, amount or kind throws (it is a caller bug, not a retry). Unknown account: throws.
   */
  credit(input: {
    accountId: string
    amount: bigint
    kind: CreditKind
    postingId: string
    note?: string
  }): Promise<{ balance: bigint; duplicate: boolean }>
  /**
   * Atomically reserves `amount` unless that would take (balance − held − amount) below `floor`
   * (insufficient_funds), or the wallet's unrecoveredAt is set (topup_required, whatever the
   * amount). An admitted hold makes `floor` the account's bound. No wallet row = balance 0.
   * The hold expires `ttlMs` after the store clock's now.
   */
  hold(input: HoldInput): Promise<HoldResult>
  /**
   * Posts `amount`, up to the account's bound, as one charge entry with postingId
   * `post:<holdId>` and releases what is left of the hold. With balance B and held H (this
   * hold h included) just before it, at most the larger of h (reserved already) and
   * B − (H − h) − bound is posted: the other open holds stay backed. The entry's `overage` marks the posted part above the
   * hold, its `unrecovered` the part not posted; the hold row records both, and an unrecovered
   * part sets the wallet's unrecoveredAt. A hold whose expiry has passed posts nothing (it is
   * released as expired, whether the reaper got to it or not). Exactly once: a second
   * settle/release answers duplicate: true and changes nothing. Unknown hold: throws.
   * `lazy`: nobody waits on this charge (its answer was sent), so a store may commit it a moment
   * later with the next hold (the embedded store waits up to SETTLE_WAIT_MS; its own reads see
   * it at once). Without it the charge commits as soon as it can.
   */
  settle(input: { holdId: string; amount: bigint; requestId: string; note?: string; lazy?: boolean }): Promise<SettleResult>
  /**
   * Moves the expiry of an open, unexpired hold to `ttlMs` after the store clock's now (never
   * earlier than it already was), so a request still running is not released by the reaper.
   * A hold that is closed or whose expiry has passed stays as it is (renewed: false): an
   * expired hold is never revived. Touches the hold row only. Unknown hold: throws.
   */
  renew(holdId: string, ttlMs: number): Promise<RenewResult>
  /** Releases the whole hold (nothing billed). Idempotent like settle. Unknown hold: throws. */
  release(holdId: string): Promise<{ released: bigint; duplicate: boolean }>
  /** Releases every open hold whose expiry passed. Safe to run from many instances at once. Returns how many. */
  reapExpired(): Promise<number>
  wallet(accountId: string): Promise<WalletState>
  /** Newest first; `before` is the id of the last entry of the previous page. */
  entries(accountId: string, opts: { limit: number; before?: string }): Promise<LedgerEntry[]>
  /**
   * The usage buckets of a key: lifetime, spend days from `fromDay` (local days), images from
   * `fromDay` too (UTC days). Rows only where something was ever reserved.
   */
  keyUsage(keyId: string, fromDay: string): Promise<KeyUsageRow[]>
  /** Sets every `used` of the key to 0 (open reservations stay). Answers the rows changed. */
  resetKeyUsage(keyId: string): Promise<number>
  /** Open holds of an account, oldest first (tests and admin). */
  openHolds(accountId: string): Promise<OpenHold[]>
}
