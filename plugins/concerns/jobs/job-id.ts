import { randomIds, type IdSource } from '../../foundation/store/clock.js'

/**
 * Gateway job ids are ours (`job_` + 22 base62 characters, see store/clock.ts), so a client's
 * id is checked against this exact shape: `.`, `..`, empty or encoded ids never match, never
 * reach a store query, and never reach an upstream path.
 */
export const JOB_ID = /^job_[0-9A-Za-z]{22}$/

export function isJobId (id: string | undefined): id is string {
  return id !== undefined && JOB_ID.test(id)
}

export function newJobId (ids: IdSource = randomIds): string {
  return ids('job')
}
