import type { Migration } from '../../migrate.js'

// A client that lost the answer to its request can find it again: the idempotency record names
// the job the request created (`owner` already names the request), and the request log records
// the key each request was sent with, so a retry's refusal and the admin listing lead to both.
// ADD COLUMN leaves existing rows NULL: no table rebuild. The partial index serves the admin
// listing's `idempotency_key` filter and costs nothing for the rows of requests without a key.
export const idempotencyRecovery: Migration = {
  version: 14,
  name: 'idempotency-recovery',
  sql: `
ALTER TABLE idempotency_keys ADD COLUMN job_id TEXT;
ALTER TABLE request_log ADD COLUMN idempotency_key TEXT;
CREATE INDEX request_log_idempotency_key_idx ON request_log (idempotency_key, created_at DESC, request_id DESC) WHERE idempotency_key IS NOT NULL;
`
}
