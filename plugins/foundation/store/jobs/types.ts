// The jobs store contract: asynchronous jobs owned by the account that created them. SQLite and
// PostgreSQL implement it and pass the same contract tests (test/store-jobs.test.ts).

/** Which upstream job namespace an id lives in: OpenAI videos, music jobs, generative-content operations. */
export type JobKind = 'video' | 'music' | 'operation'

/** `pending` until the upstream's end is observed; the three others are final. */
export type JobState = 'pending' | 'completed' | 'failed' | 'expired'

export interface NewJob {
  /** The gateway's id (`job_…`): the only id a client ever sees. */
  id: string
  kind: JobKind
  /** The upstream's id (a video or music job id) or operation name. */
  upstreamId: string
  accountId: string
  keyId: string
  /** The model that accepted the job. */
  modelId: string
  /** The provider that runs the job: polls go to it, never to another member of its pool. */
  provider: string
  /** The job's price, locked when it was submitted (minor units). */
  price: bigint
  holdId: string
  requestId: string
  createdAt: Date
  /** When the watcher first looks at the job. */
  nextCheckAt: Date
}

export interface JobRecord extends NewJob {
  state: JobState
  /** The last status the upstream reported (its own word, e.g. `in_progress`). */
  upstreamStatus: string | null
  /** How many times the watcher checked the job (its backoff grows with it). */
  checks: number
  claimedUntil: Date | null
  finishedAt: Date | null
}

export interface JobStore {
  /**
   * Records an accepted job; false (nothing recorded) when the provider's id is already
   * recorded for that provider and kind. A second job with the same id or hold throws.
   */
  create (job: NewJob): Promise<boolean>
  /** The job, only when `accountId` owns it: another account's job reads as absent. */
  getOwned (id: string, accountId: string): Promise<JobRecord | null>
  /**
   * Moves a pending job to a final state, exactly once: answers the job when this call made the
   * move, null when it was already final (or unknown).
   */
  finish (id: string, state: Exclude<JobState, 'pending'>, upstreamStatus: string | null, now: Date): Promise<JobRecord | null>
  /**
   * Claims up to `limit` pending jobs due at `now` (next_check_at passed, no live claim) until
   * `now + leaseMs`, oldest due first. A job claimed here is not handed to another caller (another
   * instance) until the lease ends, so no two watchers check it at once.
   */
  claimDue (now: Date, leaseMs: number, limit: number): Promise<JobRecord[]>
  /** After a check that did not end the job: the next check time, one more check, claim dropped. */
  reschedule (id: string, nextCheckAt: Date, upstreamStatus: string | null): Promise<void>
}
