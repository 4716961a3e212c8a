import type { Migration } from '../../migrate.js'

// The open hold of each accepted asynchronous job (video, music): settled when a poll sees
// the job completed, released when it failed. A row is taken (deleted) exactly once.
export const jobHolds: Migration = {
  version: 4,
  name: 'job-holds',
  sql: `
CREATE TABLE job_holds (
  job_ref     TEXT PRIMARY KEY,
  hold_id     TEXT NOT NULL UNIQUE,
  account_id  TEXT NOT NULL,
  model_id    TEXT NOT NULL,
  created_at  TIMESTAMPTZ NOT NULL
);
`
}
