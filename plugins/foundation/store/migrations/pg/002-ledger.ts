import type { Migration } from '../../migrate.js'

// Prepaid wallets. The schema itself refuses what the ledger must never do: a
// non-integer or negative hold, a hold that changes once closed, a charge that is not
// tied to its hold, an entry that is edited or deleted. Money is BIGINT nano-units.
export const ledger: Migration = {
  version: 2,
  name: 'ledger',
  sql: `
CREATE TABLE wallets (
  account_id  TEXT PRIMARY KEY REFERENCES accounts (id),
  balance     BIGINT NOT NULL DEFAULT 0,
  held        BIGINT NOT NULL DEFAULT 0 CHECK (held >= 0),
  updated_at  TIMESTAMPTZ NOT NULL
);

CREATE TABLE holds (
  id             TEXT PRIMARY KEY,
  account_id     TEXT NOT NULL REFERENCES wallets (account_id),
  amount         BIGINT NOT NULL CHECK (amount >= 0),
  status         TEXT NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'posted', 'released', 'expired')),
  request_id     TEXT NOT NULL,
  expires_at     TIMESTAMPTZ NOT NULL,
  created_at     TIMESTAMPTZ NOT NULL,
  settled_at     TIMESTAMPTZ,
  posted_amount  BIGINT CHECK (posted_amount >= 0 AND posted_amount <= amount),
  CHECK ((status = 'open') = (settled_at IS NULL)),
  CHECK ((status = 'posted') = (posted_amount IS NOT NULL))
);
CREATE INDEX holds_open_expiry_idx ON holds (expires_at) WHERE status = 'open';
CREATE INDEX holds_open_account_idx ON holds (account_id) WHERE status = 'open';

CREATE FUNCTION ledger_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION '% % refused on row %: holds change once, from open, and ledger entries never',
    TG_TABLE_NAME, TG_OP, OLD.id USING ERRCODE = 'check_violation';
END $$;
-- A hold changes once, open → posted | released | expired, and only in its outcome columns.
-- The WHEN clause keeps the normal path free of any function call.
CREATE TRIGGER holds_transition BEFORE UPDATE ON holds FOR EACH ROW
  WHEN (OLD.status <> 'open' OR NEW.status = 'open' OR NEW.id <> OLD.id OR NEW.account_id <> OLD.account_id
    OR NEW.amount <> OLD.amount OR NEW.request_id <> OLD.request_id OR NEW.expires_at <> OLD.expires_at
    OR NEW.created_at <> OLD.created_at)
  EXECUTE FUNCTION ledger_refuse_change();
CREATE TRIGGER holds_no_delete BEFORE DELETE ON holds FOR EACH ROW EXECUTE FUNCTION ledger_refuse_change();

CREATE TABLE ledger_entries (
  id          TEXT PRIMARY KEY,
  account_id  TEXT NOT NULL REFERENCES wallets (account_id),
  amount      BIGINT NOT NULL,
  kind        TEXT NOT NULL CHECK (kind IN ('topup', 'grant', 'charge', 'adjustment')),
  posting_id  TEXT NOT NULL UNIQUE,
  hold_id     TEXT REFERENCES holds (id),
  request_id  TEXT,
  note        TEXT,
  created_at  TIMESTAMPTZ NOT NULL,
  CHECK (kind NOT IN ('topup', 'grant') OR amount > 0),
  -- A charge is the posting of exactly one hold, so the UNIQUE posting_id bills it once.
  CHECK (kind <> 'charge' OR (amount <= 0 AND hold_id IS NOT NULL AND posting_id = 'post:' || hold_id)),
  CHECK (kind = 'charge' OR posting_id NOT LIKE 'post:%')
);
CREATE INDEX ledger_entries_account_idx ON ledger_entries (account_id, created_at, id);
CREATE TRIGGER ledger_entries_append_only BEFORE UPDATE OR DELETE ON ledger_entries
  FOR EACH ROW EXECUTE FUNCTION ledger_refuse_change();
`,
}
