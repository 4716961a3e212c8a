import type { Migration } from '../../migrate.js'

// The SQLite twin rebuilds holds and ledger_entries WITHOUT ROWID, which
// PostgreSQL has no counterpart for (its tables are heaps beside their indexes). What carries
// over is the holds' index: each hold was written to two partial indexes of the open holds when
// it opened, and removed from both when it closed. One on (account_id, expires_at) serves both
// readers, the reaper (status = 'open' AND expires_at <= $1, the index's second column) and an
// account's open holds (its first): the partial index holds only the open holds, the requests
// in flight, so scanning it whole is cheap.
export const ledgerLayout: Migration = {
  version: 17,
  name: 'ledger-layout',
  sql: `
DROP INDEX holds_open_expiry_idx;
DROP INDEX holds_open_account_idx;
CREATE INDEX holds_open_idx ON holds (account_id, expires_at) WHERE status = 'open';
`
}
