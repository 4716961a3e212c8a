import type { Migration } from '../../migrate.js'

// The account console (plugins/apps/console): one sign-in identity per account, its pending email
// verification code, its sessions, and the outbox of mail the console would send (read by the
// operator through the admin API when no SMTP server is configured). Secrets are stored hashed:
// the password as scrypt, codes and session tokens as digests. Times are TIMESTAMPTZ.
export const consoleTables: Migration = {
  version: 10,
  name: 'console',
  sql: `
CREATE TABLE console_users (
  id                 TEXT PRIMARY KEY,
  account_id         TEXT NOT NULL UNIQUE REFERENCES accounts (id),
  email              TEXT NOT NULL UNIQUE,
  password_hash      TEXT NOT NULL,
  email_verified_at  TIMESTAMPTZ,
  created_at         TIMESTAMPTZ NOT NULL
);

CREATE TABLE console_codes (
  user_id     TEXT PRIMARY KEY REFERENCES console_users (id),
  code_hash   TEXT NOT NULL,
  attempts    INTEGER NOT NULL DEFAULT 0,
  expires_at  TIMESTAMPTZ NOT NULL
);

CREATE TABLE console_sessions (
  id            TEXT PRIMARY KEY,
  user_id       TEXT NOT NULL REFERENCES console_users (id),
  account_id    TEXT NOT NULL,
  token_hash    TEXT NOT NULL UNIQUE,
  user_agent    TEXT NOT NULL,
  address       TEXT NOT NULL,
  created_at    TIMESTAMPTZ NOT NULL,
  last_seen_at  TIMESTAMPTZ NOT NULL,
  expires_at    TIMESTAMPTZ NOT NULL
);
CREATE INDEX console_sessions_user_idx ON console_sessions (user_id, created_at);

CREATE TABLE console_outbox (
  id          TEXT PRIMARY KEY,
  to_email    TEXT NOT NULL,
  subject     TEXT NOT NULL,
  body        TEXT NOT NULL,
  created_at  TIMESTAMPTZ NOT NULL
);
CREATE INDEX console_outbox_to_idx ON console_outbox (to_email, created_at);
`
}
