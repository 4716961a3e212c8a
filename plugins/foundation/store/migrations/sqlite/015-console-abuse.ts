import type { Migration } from '../../migrate.js'

// The console against repeated abuse (plugins/apps/console): a sign-up is pending, with no account,
// until its email code is entered (console_signups; a pending sign-up older than the code's
// lifetime may be restarted by a new sign-up); email codes are per purpose (verify, reset) and
// address; console_throttle holds the throttle counters every instance shares (keys are HMACs,
// never an address or email in the clear). Unverified users of older versions become pending
// sign-ups keeping their account (codes dropped: they ask for a new one). console_codes stays
// for instances of the previous version during a rolling deploy; nothing writes it now.
// Times are ms since the epoch.
export const consoleAbuse: Migration = {
  version: 15,
  name: 'console-abuse',
  sql: `
CREATE TABLE console_signups (
  email          TEXT PRIMARY KEY,
  password_hash  TEXT NOT NULL,
  started_at     INTEGER NOT NULL,
  account_id     TEXT REFERENCES accounts (id)
) STRICT;

CREATE TABLE console_email_codes (
  purpose     TEXT NOT NULL CHECK (purpose IN ('verify', 'reset')),
  email       TEXT NOT NULL,
  code_hash   TEXT NOT NULL,
  attempts    INTEGER NOT NULL DEFAULT 0,
  expires_at  INTEGER NOT NULL,
  PRIMARY KEY (purpose, email)
) STRICT;

CREATE TABLE console_throttle (
  key             TEXT PRIMARY KEY,
  count           INTEGER NOT NULL,
  window_ends_at  INTEGER NOT NULL
) STRICT;
CREATE INDEX console_throttle_ends_idx ON console_throttle (window_ends_at);

INSERT INTO console_signups (email, password_hash, started_at, account_id)
  SELECT email, password_hash, created_at, account_id FROM console_users WHERE email_verified_at IS NULL;
DELETE FROM console_codes WHERE user_id IN (SELECT id FROM console_users WHERE email_verified_at IS NULL);
DELETE FROM console_sessions WHERE user_id IN (SELECT id FROM console_users WHERE email_verified_at IS NULL);
DELETE FROM console_users WHERE email_verified_at IS NULL;
`
}
