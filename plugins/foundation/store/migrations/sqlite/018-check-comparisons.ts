import type { Migration } from '../../migrate.js'

// A CHECK of the form `x IN ('a', 'b', 'c')` costs SQLite a temporary B-tree each time it is
// checked: with more than two values, the list is built into an ephemeral index (created,
// filled, searched and dropped), and a CHECK runs on every insert and on every update that sets
// its column. A billed request inserts a hold, closes it and inserts its charge entry: three
// such B-trees per request (a key with caps adds one per key_usage row it reserves in, two or
// three), 55,000 of the gateway's CPU instructions per request outside V8's compiler (970,000
// before, 915,000 after; callgrind, chat JSON at 4 connections), most of it zeroing their
// pages. An insert and an update of one row took 6.0 µs against 2.8 µs (a table of 100,000
// rows, in memory). Written as comparisons joined by OR, the same CHECK is a few comparisons in
// place. Equivalent for every value: a NULL is refused by NOT NULL before either form runs, and
// any other value is accepted by one exactly when it is by the other. `kind NOT IN ('topup',
// 'grant')` keeps its form: SQLite compares a list of two in place.
//
// SQLite cannot change a CHECK in place: holds and ledger_entries are rebuilt as 017 rebuilt them
// (see there), word for word but the two CHECKs, with their index and triggers created again,
// and key_usage (one row per capped key and period, nothing referencing it) as 009 created it
// but its CHECK. The copy is paid once, at the first start after the upgrade: 6.2 s for a
// million holds and a million charges (a 420 MB database file, on the 2-core machine of these
// figures).
// request_log keeps its one such CHECK (billing_status), which costs the same per row: it is the
// largest table, and rebuilding it would copy every operator's whole request log; its rows are
// inserted in batches, off the request's path.
export const checkComparisons: Migration = {
  version: 18,
  name: 'check-comparisons',
  rebuildsTables: true,
  sql: `
CREATE TABLE holds_new (
  id             TEXT PRIMARY KEY,
  account_id     TEXT NOT NULL REFERENCES wallets (account_id),
  amount         INTEGER NOT NULL CHECK (amount >= 0),
  status         TEXT NOT NULL DEFAULT 'open' CHECK (status = 'open' OR status = 'posted' OR status = 'released' OR status = 'expired'),
  request_id     TEXT NOT NULL,
  expires_at     INTEGER NOT NULL,
  created_at     INTEGER NOT NULL,
  settled_at     INTEGER,
  posted_amount  INTEGER CHECK (posted_amount >= 0 AND posted_amount <= amount),
  cap_key_id     TEXT,
  cap_day        TEXT,
  cap_image_day  TEXT,
  cap_images     INTEGER NOT NULL DEFAULT 0 CHECK (cap_images >= 0),
  overage        INTEGER CHECK (overage IS NULL OR (status = 'posted' AND overage > 0)),
  unrecovered    INTEGER CHECK (unrecovered IS NULL OR (status = 'posted' AND unrecovered > 0)),
  CHECK ((status = 'open') = (settled_at IS NULL)),
  CHECK ((status = 'posted') = (posted_amount IS NOT NULL))
) STRICT, WITHOUT ROWID;
INSERT INTO holds_new (id, account_id, amount, status, request_id, expires_at, created_at, settled_at, posted_amount,
  cap_key_id, cap_day, cap_image_day, cap_images, overage, unrecovered)
SELECT id, account_id, amount, status, request_id, expires_at, created_at, settled_at, posted_amount,
  cap_key_id, cap_day, cap_image_day, cap_images, overage, unrecovered
FROM holds;

CREATE TABLE ledger_entries_new (
  id           TEXT PRIMARY KEY,
  account_id   TEXT NOT NULL REFERENCES wallets (account_id),
  amount       INTEGER NOT NULL,
  kind         TEXT NOT NULL CHECK (kind = 'topup' OR kind = 'grant' OR kind = 'charge' OR kind = 'adjustment'),
  posting_id   TEXT NOT NULL UNIQUE,
  hold_id      TEXT REFERENCES holds (id),
  request_id   TEXT,
  note         TEXT,
  created_at   INTEGER NOT NULL,
  overage      INTEGER CHECK (overage IS NULL OR (kind = 'charge' AND overage > 0 AND overage <= -amount)),
  unrecovered  INTEGER CHECK (unrecovered IS NULL OR (kind = 'charge' AND unrecovered > 0)),
  CHECK (kind NOT IN ('topup', 'grant') OR amount > 0),
  CHECK (kind <> 'charge' OR (amount <= 0 AND hold_id IS NOT NULL AND posting_id = 'post:' || hold_id)),
  CHECK (kind = 'charge' OR posting_id NOT LIKE 'post:%')
) STRICT, WITHOUT ROWID;
INSERT INTO ledger_entries_new (id, account_id, amount, kind, posting_id, hold_id, request_id, note, created_at, overage, unrecovered)
SELECT id, account_id, amount, kind, posting_id, hold_id, request_id, note, created_at, overage, unrecovered
FROM ledger_entries;

CREATE TABLE key_usage_new (
  key_id  TEXT NOT NULL,
  kind    TEXT NOT NULL CHECK (kind = 'total' OR kind = 'spend' OR kind = 'images'),
  period  TEXT NOT NULL,
  used    INTEGER NOT NULL DEFAULT 0 CHECK (used >= 0),
  held    INTEGER NOT NULL DEFAULT 0 CHECK (held >= 0),
  PRIMARY KEY (key_id, kind, period)
) STRICT, WITHOUT ROWID;
INSERT INTO key_usage_new (key_id, kind, period, used, held)
SELECT key_id, kind, period, used, held FROM key_usage;
DROP TABLE key_usage;
ALTER TABLE key_usage_new RENAME TO key_usage;

DROP TABLE ledger_entries;
DROP TABLE holds;
ALTER TABLE holds_new RENAME TO holds;
ALTER TABLE ledger_entries_new RENAME TO ledger_entries;

CREATE INDEX holds_open_idx ON holds (account_id, expires_at) WHERE status = 'open';
CREATE TRIGGER holds_transition BEFORE UPDATE ON holds
  WHEN OLD.status <> 'open' OR NEW.id <> OLD.id OR NEW.account_id <> OLD.account_id
    OR NEW.amount <> OLD.amount OR NEW.request_id <> OLD.request_id OR NEW.created_at <> OLD.created_at
    OR (NEW.status = 'open' AND NEW.expires_at < OLD.expires_at)
    OR (NEW.status <> 'open' AND NEW.expires_at <> OLD.expires_at)
BEGIN
  SELECT RAISE(ABORT, 'a hold changes once, from open to posted, released or expired; open, only its expiry moves, forward');
END;
CREATE TRIGGER holds_no_delete BEFORE DELETE ON holds
BEGIN
  SELECT RAISE(ABORT, 'holds are append-only');
END;

CREATE INDEX ledger_entries_account_idx ON ledger_entries (account_id, created_at, id);
CREATE TRIGGER ledger_entries_no_update BEFORE UPDATE ON ledger_entries
BEGIN
  SELECT RAISE(ABORT, 'ledger entries are append-only');
END;
CREATE TRIGGER ledger_entries_no_delete BEFORE DELETE ON ledger_entries
BEGIN
  SELECT RAISE(ABORT, 'ledger entries are append-only');
END;
`
}
