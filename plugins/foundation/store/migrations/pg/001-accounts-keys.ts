import type { Migration } from '../../migrate.js'

// Unqualified names: the pool's search_path decides the schema.
export const accountsKeys: Migration = {
  version: 1,
  name: 'accounts-keys',
  sql: `
CREATE TABLE accounts (
  id          TEXT PRIMARY KEY,
  name        TEXT NOT NULL,
  status      TEXT NOT NULL CHECK (status IN ('active', 'suspended')),
  tier        TEXT NOT NULL,
  topped_up   BOOLEAN NOT NULL DEFAULT FALSE,
  created_at  TIMESTAMPTZ NOT NULL
);
CREATE INDEX accounts_created_idx ON accounts (created_at, id);

CREATE TABLE api_keys (
  id                 TEXT PRIMARY KEY,
  account_id         TEXT NOT NULL REFERENCES accounts (id),
  name               TEXT NOT NULL,
  prefix             TEXT NOT NULL,
  lookup_hash        TEXT NOT NULL UNIQUE,
  sealed_key         TEXT,
  allowed_models     TEXT[],
  expires_at         TIMESTAMPTZ,
  active             BOOLEAN NOT NULL DEFAULT TRUE,
  revoked_at         TIMESTAMPTZ,
  timezone           TEXT NOT NULL DEFAULT 'UTC',
  quota              BIGINT CHECK (quota >= 0),
  daily_spend_cap    BIGINT CHECK (daily_spend_cap >= 0),
  monthly_spend_cap  BIGINT CHECK (monthly_spend_cap >= 0),
  daily_image_cap    INTEGER CHECK (daily_image_cap >= 0),
  tags               TEXT[] NOT NULL DEFAULT '{}',
  rate_limit_policy  TEXT,
  legacy             BOOLEAN NOT NULL DEFAULT FALSE,
  created_at         TIMESTAMPTZ NOT NULL,
  CHECK (NOT legacy OR sealed_key IS NULL)
);
CREATE INDEX api_keys_account_idx ON api_keys (account_id, created_at, id);
`,
}
