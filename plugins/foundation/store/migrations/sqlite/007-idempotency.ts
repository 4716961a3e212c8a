import type { Migration } from '../../migrate.js'

// One row per idempotency key of an account. `expires_at` (ms since the epoch) is the claim's
// lease while the request runs (renewed by its instance; a crashed instance's claim lapses with
// it) and the end of the retention once it finished (then the periodic sweep deletes the row).
// `owner` is the request that holds the claim: only it renews, completes or releases the row.
export const idempotency: Migration = {
  version: 7,
  name: 'idempotency',
  sql: `
CREATE TABLE idempotency_keys (
  account_id   TEXT NOT NULL,
  idem_key     TEXT NOT NULL,
  fingerprint  TEXT NOT NULL,
  owner        TEXT NOT NULL UNIQUE,
  state        TEXT NOT NULL CHECK (state IN ('running', 'done')),
  created_at   INTEGER NOT NULL,
  expires_at   INTEGER NOT NULL,
  PRIMARY KEY (account_id, idem_key)
);
CREATE INDEX idempotency_keys_expires ON idempotency_keys (expires_at);
`
}
