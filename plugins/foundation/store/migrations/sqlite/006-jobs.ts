import type { Migration } from '../../migrate.js'

// Asynchronous jobs (video, music, generative-content operations), owned by the account that
// created them. They replace job_holds: a job now carries its gateway id, the upstream id it
// maps to, its owner, the provider that runs it, the price locked at submit and its hold, and
// the watcher's schedule (next_check_at) and row claim (claimed_until). Open job_holds rows of
// an older version cannot be matched to an owner; their holds expire unbilled (README).
// Times are integer milliseconds since the epoch; money is INTEGER nano-units.
export const jobs: Migration = {
  version: 6,
  name: 'jobs',
  sql: `
DROP TABLE job_holds;
CREATE TABLE jobs (
  id               TEXT PRIMARY KEY,
  kind             TEXT NOT NULL,
  upstream_id      TEXT NOT NULL,
  account_id       TEXT NOT NULL,
  key_id           TEXT NOT NULL,
  model_id         TEXT NOT NULL,
  provider         TEXT NOT NULL,
  price            INTEGER NOT NULL CHECK (price >= 0),
  hold_id          TEXT NOT NULL UNIQUE,
  request_id       TEXT NOT NULL,
  state            TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'completed', 'failed', 'expired')),
  upstream_status  TEXT,
  checks           INTEGER NOT NULL DEFAULT 0,
  next_check_at    INTEGER NOT NULL,
  claimed_until    INTEGER,
  created_at       INTEGER NOT NULL,
  finished_at      INTEGER,
  UNIQUE (provider, kind, upstream_id)
) STRICT;
CREATE INDEX jobs_due_idx ON jobs (next_check_at) WHERE state = 'pending';
`
}
