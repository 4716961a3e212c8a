import type { Migration } from '../../migrate.js'

// One row per gateway request. No foreign keys: a row is written after the request is
// answered, possibly for an account or key that was never found, and one row must never
// make a whole batch fail. Times are ms since the epoch, durations REAL ms, money integer
// nano-units, usage a JSON object (new billing units need no migration).
export const requestLog: Migration = {
  version: 3,
  name: 'request-log',
  sql: `
CREATE TABLE request_log (
  request_id       TEXT PRIMARY KEY,
  account_id       TEXT,
  key_id           TEXT,
  route            TEXT NOT NULL,
  operation        TEXT NOT NULL,
  requested_model  TEXT,
  answered_model   TEXT,
  status           INTEGER NOT NULL,
  outcome          TEXT NOT NULL,
  error_code       TEXT,
  stream           INTEGER NOT NULL CHECK (stream IN (0, 1)),
  usage            TEXT,
  usage_reported   INTEGER CHECK (usage_reported IN (0, 1)),
  cost             INTEGER CHECK (cost >= 0),
  held             INTEGER CHECK (held >= 0),
  hold_id          TEXT,
  posting_id       TEXT,
  billing_status   TEXT NOT NULL CHECK (billing_status IN ('BILLED', 'NOT_BILLED', 'PENDING', 'UNKNOWN')),
  overhead_ms      REAL,
  upstream_ms      REAL,
  total_ms         REAL NOT NULL,
  created_at       INTEGER NOT NULL
) STRICT;
CREATE INDEX request_log_account_idx ON request_log (account_id, created_at DESC, request_id DESC);
CREATE INDEX request_log_created_idx ON request_log (created_at DESC, request_id DESC);
`,
}
