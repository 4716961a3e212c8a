import type { Migration } from '../../migrate.js'

// Times are integer milliseconds since the epoch; money is integer minor units;
// booleans are 0/1; lists are JSON arrays.
export const accountsKeys: Migration = {
  version: 1,
  name: 'accounts-keys',
  sql: `
CREATE TABLE accounts (
  id          TEXT PRIMARY KEY,
  name        TEXT NOT NULL,
  status      TEXT NOT NULL CHECK (status IN ('active', 'suspended')),
  tier        TEXT NOT NULL,
  topped_up   INTEGER NOT NULL DEFAULT 0 CHECK (topped_up IN (0, 1)),
  created_at  INTEGER NOT NULL
) STRICT;
CREATE INDEX accounts_created_idx ON accounts (created_at, id);

CREATE TABLE api_keys (
  id                 TEXT PRIMARY KEY,
  account_id         TEXT NOT NULL REFERENCES accounts (id),
  name               TEXT NOT NULL,
  prefix             TEXT NOT NULL,
  lookup_hash        TEXT NOT NULL UNIQUE,
  sealed_key         TEXT,
  allowed_models     TEXT,
  expires_at         INTEGER,
  active             INTEGER NOT NULL DEFAULT 1 CHECK (active IN (0, 1)),
  revoked_at         INTEGER,
  timezone           TEXT NOT NULL DEFAULT 'UTC',
  quota              INTEGER CHECK (quota >= 0),
  daily_spend_cap    INTEGER CHECK (daily_spend_cap >= 0),
  monthly_spend_cap  INTEGER CHECK (monthly_spend_cap >= 0),
  daily_image_cap    INTEGER CHECK (daily_image_cap >= 0),
  tags               TEXT NOT NULL DEFAULT '[]',
  rate_limit_policy  TEXT,
  legacy             INTEGER NOT NULL DEFAULT 0 CHECK (legacy IN (0, 1)),
  created_at         INTEGER NOT NULL,
  CHECK (legacy = 0 OR sealed_key IS NULL)
) STRICT;
CREATE INDEX api_keys_account_idx ON api_keys (account_id, created_at, id);
`,
}
