import type { ClaimStatus } from './types.js'

/** The row a claim met and could not take over. */
export interface Existing { fingerprint: string, state: string }

/** What a row the claim could not take over means for a request with this fingerprint. */
export function statusOf (row: Existing, fingerprint: string): ClaimStatus {
  // A different request under the same key conflicts whatever the state of the first one.
  if (row.fingerprint !== fingerprint) return 'conflict'
  return row.state === 'running' ? 'in_progress' : 'completed'
}
