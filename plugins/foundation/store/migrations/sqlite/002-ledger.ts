import type { Migration } from '../../migrate.js'

// Prepaid wallets; see the PostgreSQL twin for what each constraint protects.
// Times are integer milliseconds since the epoch; money is INTEGER nano-units.
export const ledger: Migration = {
  version: 2,
  name: 'ledger',
  sql: `
CREATE TABLE wallets (
  account_id  TEXT PRIMARY KEY REFERENCES accounts (id),
  balance     INTEGER NOT NULL DEFAULT 0,
  held        INTEGER NOT NULL DEFAULT 0 CHECK (held >= 0),
  updated_at  INTEGER NOT NULL
) STRICT;

CREATE TABLE holds (
  id             TEXT PRIMARY KEY,
  account_id     TEXT NOT NULL REFERENCES wallets (account_id),
  amount         INTEGER NOT NULL CHECK (amount >= 0),
  status         TEXT NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'posted', 'released', 'expired')),
  request_id     TEXT NOT NULL,
  expires_at     INTEGER NOT NULL,
  created_at     INTEGER NOT NULL,
  settled_at     INTEGER,
  posted_amount  INTEGER CHECK (posted_amount >= 0 AND posted_amount <= amount),
  CHECK ((status = 'open') = (settled_at IS NULL)),
  CHECK ((status = 'posted') = (posted_amount IS NOT NULL))
) STRICT;
CREATE INDEX holds_open_expiry_idx ON holds (expires_at) WHERE status = 'open';
CREATE INDEX holds_open_account_idx ON holds (account_id) WHERE status = 'open';

CREATE TRIGGER holds_transition BEFORE UPDATE ON holds
  WHEN OLD.status <> 'open' OR NEW.status = 'open' OR NEW.id <> OLD.id OR NEW.account_id <> OLD.account_id
    OR NEW.amount <> OLD.amount OR NEW.request_id <> OLD.request_id OR NEW.expires_at <> OLD.expires_at
    OR NEW.created_at <> OLD.created_at
BEGIN
  SELECT RAISE(ABORT, 'a hold changes once, from open to posted, released or expired');
END;
CREATE TRIGGER holds_no_delete BEFORE DELETE ON holds
BEGIN
  SELECT RAISE(ABORT, 'holds are append-only');
END;

CREATE TABLE ledger_entries (
  id          TEXT PRIMARY KEY,
  account_id  TEXT NOT NULL REFERENCES wallets (account_id),
  amount      INTEGER NOT NULL,
  kind        TEXT NOT NULL CHECK (kind IN ('topup', 'grant', 'charge', 'adjustment')),
  posting_id  TEXT NOT NULL UNIQUE,
  hold_id     TEXT REFERENCES holds (id),
  request_id  TEXT,
  note        TEXT,
  created_at  INTEGER NOT NULL,
  CHECK (kind NOT IN ('topup', 'grant') OR amount > 0),
  CHECK (kind <> 'charge' OR (amount <= 0 AND hold_id IS NOT NULL AND posting_id = 'post:' || hold_id)),
  CHECK (kind = 'charge' OR posting_id NOT LIKE 'post:%')
) STRICT;
CREATE INDEX ledger_entries_account_idx ON ledger_entries (account_id, created_at, id);
CREATE TRIGGER ledger_entries_no_update BEFORE UPDATE ON ledger_entries
BEGIN
  SELECT RAISE(ABORT, 'ledger entries are append-only');
END;
CREATE TRIGGER ledger_entries_no_delete BEFORE DELETE ON ledger_entries
BEGIN
  SELECT RAISE(ABORT, 'ledger entries are append-only');
END;
`,
}
