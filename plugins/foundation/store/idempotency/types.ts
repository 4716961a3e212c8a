/** A request asking to run under an idempotency key of its account. */
export interface IdempotencyClaim {
  accountId: string
  /** The client's `X-Idempotency-Key`, already validated. */
  key: string
  /** Hash of what the request asks (route, model, canonical body): the same key with another one conflicts. */
  fingerprint: string
  /** Unique per attempt (the request id): only the owner renews, completes or releases its claim. */
  owner: string
}

/**
 * What a claim found:
 * - `claimed`: this request runs (the key was free, or its previous claim lapsed or expired);
 * - `conflict`: the key belongs to a different request (another fingerprint), whatever its state;
 * - `in_progress`: the same request runs elsewhere and its lease is live;
 * - `completed`: the same request already reached a final state.
 */
export type ClaimStatus = 'claimed' | 'conflict' | 'in_progress' | 'completed'

/** The request that holds a key, as a refused retry is told (REQUEST_IDEMPOTENCY_*): what it can look up instead. */
export interface IdempotencyOriginal {
  /** The request id of the request that ran under the key (its request log row). */
  requestId: string
  /** The gateway's id of the job that request created, when it created one. */
  jobId: string | null
}

/** Times are the store clock's; durations are milliseconds. */
export interface IdempotencyStore {
  /**
   * Atomic across instances (one INSERT … ON CONFLICT on the (account, key) primary key): of
   * many concurrent claims of a free key exactly one is `claimed`. The claim is a lease of
   * `leaseMs`; a row whose lease or retention ran out is taken over.
   */
  claim (claim: IdempotencyClaim, leaseMs: number): Promise<ClaimStatus>
  /** Extends the leases of these owners' running claims to now + leaseMs; returns how many. */
  renew (owners: readonly string[], leaseMs: number): Promise<number>
  /**
   * The owner's request reached a final state: the key stays used for `retainMs`, naming the
   * job the request created (when `jobId`). False when the claim was no longer this owner's.
   */
  complete (owner: string, retainMs: number, jobId?: string): Promise<boolean>
  /**
   * The owner's request created this job (recorded before the client sees its id): the key is
   * final from now on, for `retainMs`, and names the job, so a retry learns the job to poll even
   * if the answer never reached the client. False when the claim was no longer this owner's.
   */
  linkJob (owner: string, jobId: string, retainMs: number): Promise<boolean>
  /** Who holds the account's key now (read after a refused claim); null when nobody does. */
  original (accountId: string, key: string): Promise<IdempotencyOriginal | null>
  /** The owner's request was refused before it ran: the key is free again. */
  release (owner: string): Promise<boolean>
  /** Deletes every row whose lease or retention ran out; returns how many. */
  purge (): Promise<number>
}
