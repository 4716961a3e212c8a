import type { Migration } from '../../migrate.js'

// A bounded account; see the PostgreSQL twin for what each column means. Times are integer
// milliseconds. ADD COLUMN leaves existing rows NULL, which every CHECK admits: no rebuild.
export const boundedAccount: Migration = {
  version: 13,
  name: 'bounded-account',
  sql: `
ALTER TABLE wallets ADD COLUMN bound INTEGER;
ALTER TABLE wallets ADD COLUMN unrecovered_at INTEGER;
ALTER TABLE holds ADD COLUMN overage INTEGER CHECK (overage IS NULL OR (status = 'posted' AND overage > 0));
ALTER TABLE holds ADD COLUMN unrecovered INTEGER CHECK (unrecovered IS NULL OR (status = 'posted' AND unrecovered > 0));
ALTER TABLE ledger_entries ADD COLUMN unrecovered INTEGER
  CHECK (unrecovered IS NULL OR (kind = 'charge' AND unrecovered > 0));
ALTER TABLE request_log ADD COLUMN unrecovered INTEGER CHECK (unrecovered > 0);
`
}
