// The one writer of the ledger. Every hold is created, renewed, posted and released here, for
// requests (the wallet plugin's charge and settle, the hold keeper) and jobs alike (plugins/concerns/jobs
// is given the part it needs, `HoldCloser`), and credits and key-usage resets are made here for
// the admin API; the reaper releases expired holds through it. Other concerns read the ledger
// (a wallet's state, its entries) but never write it: `test/wallet-owns-ledger.test.ts` reads
// the sources and fails otherwise. The composition root makes one wallet over the store's ledger.
import type { CreditKind, HoldInput, HoldResult, LedgerStore, RenewResult, SettleResult } from '../../foundation/store/ledger/types.js'
import { postHold, releaseHold, type PostInput, type UnrecoveredReporter } from './post.js'

export type { PostInput, UnrecoveredOverage, UnrecoveredReporter } from './post.js'

export interface CreditInput {
  accountId: string
  amount: bigint
  kind: CreditKind
  postingId: string
  note?: string
}

/** What ends a hold: what plugins/concerns/jobs is given to end a job's hold (it writes nothing else). */
export interface HoldCloser {
  /**
   * Posts a hold's charge, down to the account's bound, and releases the rest, exactly once
   * (a second post or release of the hold answers duplicate and changes nothing); retried on a
   * database error; an unrecovered part is reported once, by the call that posted it.
   */
  post (input: PostInput): Promise<SettleResult>
  /** Releases the whole hold (nothing billed), exactly once; retried on a database error. */
  release (holdId: string): Promise<{ released: bigint, duplicate: boolean }>
}

export interface Wallet extends HoldCloser {
  /** Reserves the worst case of a request (see LedgerStore.hold): refused values, never thrown. */
  hold (input: HoldInput): Promise<HoldResult>
  /** Moves an open hold's expiry ttlMs past now; a closed or expired hold stays as it is. */
  renew (holdId: string, ttlMs: number): Promise<RenewResult>
  /** Releases every open hold whose expiry passed (any instance may run it). */
  reapExpired (): Promise<number>
  /** Credits the account (a top-up or a grant; a retried postingId changes nothing). */
  credit (input: CreditInput): Promise<{ balance: bigint, duplicate: boolean }>
  /** Sets every `used` of a key's caps to 0 (open reservations stay). */
  resetKeyUsage (keyId: string): Promise<number>
}

export interface WalletOptions {
  ledger: LedgerStore
  /** Told about each unrecovered overage once (the operator's log line and metric). */
  onUnrecovered?: UnrecoveredReporter | undefined
}

/**
 * The wallet over a ledger. Stateless: each method is one ledger call (post and release with
 * their retry), so the hot path pays one function call more than calling the ledger itself.
 */
export function createWallet (opts: WalletOptions): Wallet {
  const { ledger } = opts
  return {
    // The ledger's own promises, passed on: no extra promise or turn per call.
    hold: (input) => ledger.hold(input),
    renew: (holdId, ttlMs) => ledger.renew(holdId, ttlMs),
    post: (input) => postHold(opts, input),
    release: (holdId) => releaseHold(opts, holdId),
    reapExpired: () => ledger.reapExpired(),
    credit: (input) => ledger.credit(input),
    resetKeyUsage: (keyId) => ledger.resetKeyUsage(keyId)
  }
}
