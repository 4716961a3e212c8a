import type { Migration } from '../../migrate.js'

// One row per gateway request. No foreign keys: a row is written after the request is
// answered, possibly for an account or key that was never found, and one row must never
// make a whole batch fail. request_id sorts bytewise (COLLATE "C") like SQLite, so both
// backends page same-millisecond rows in the same order. Usage is JSONB: new billing
// units need no migration.
export const requestLog: Migration = {
  version: 3,
  name: 'request-log',
  sql: `
CREATE TABLE request_log (
  request_id       TEXT COLLATE "C" PRIMARY KEY,
  account_id       TEXT,
  key_id           TEXT,
  route            TEXT NOT NULL,
  operation        TEXT NOT NULL,
  requested_model  TEXT,
  answered_model   TEXT,
  status           INTEGER NOT NULL,
  outcome          TEXT NOT NULL,
  error_code       TEXT,
  stream           BOOLEAN NOT NULL,
  usage            JSONB,
  usage_reported   BOOLEAN,
  cost             BIGINT CHECK (cost >= 0),
  held             BIGINT CHECK (held >= 0),
  hold_id          TEXT,
  posting_id       TEXT,
  billing_status   TEXT NOT NULL CHECK (billing_status IN ('BILLED', 'NOT_BILLED', 'PENDING', 'UNKNOWN')),
  overhead_ms      DOUBLE PRECISION,
  upstream_ms      DOUBLE PRECISION,
  total_ms         DOUBLE PRECISION NOT NULL,
  created_at       TIMESTAMPTZ NOT NULL
);
CREATE INDEX request_log_account_idx ON request_log (account_id, created_at DESC, request_id DESC);
CREATE INDEX request_log_created_idx ON request_log (created_at DESC, request_id DESC);
`,
}
