import type { Migration } from '../../migrate.js'

// A hold of a long answer is renewed while the answer runs (LedgerStore.renew): an open hold
// may move its expiry forward and stay open. Every other rule of holds_transition stands: a
// hold still changes its outcome once, and never its identity, amount or origin.
export const holdRenewal: Migration = {
  version: 8,
  name: 'hold-renewal',
  sql: `
DROP TRIGGER holds_transition;
CREATE TRIGGER holds_transition BEFORE UPDATE ON holds
  WHEN OLD.status <> 'open' OR NEW.id <> OLD.id OR NEW.account_id <> OLD.account_id
    OR NEW.amount <> OLD.amount OR NEW.request_id <> OLD.request_id OR NEW.created_at <> OLD.created_at
    OR (NEW.status = 'open' AND NEW.expires_at < OLD.expires_at)
    OR (NEW.status <> 'open' AND NEW.expires_at <> OLD.expires_at)
BEGIN
  SELECT RAISE(ABORT, 'a hold changes once, from open to posted, released or expired; open, only its expiry moves, forward');
END;
`
}
