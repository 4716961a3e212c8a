export interface JobHold {
  /** `<kind>:<upstream job id>`, e.g. `video:video_123`. */
  jobRef: string
  holdId: string
  accountId: string
  /** The model that accepted the job: its price is charged on completion. */
  modelId: string
  createdAt: Date
}

export interface JobHoldStore {
  /** Remembers the open hold of an accepted job. A job ref seen again keeps its first hold. */
  record (job: JobHold): Promise<void>
  /** Removes and returns the job's hold: only one caller ever gets it (so it settles once). */
  take (jobRef: string): Promise<JobHold | null>
}
