import type { Migration } from '../../migrate.js'

// A charge above its hold is posted in full: the charge entry carries the whole amount and
// `overage` marks the part of it above the hold (NULL when the charge fit). The hold row keeps
// `posted_amount ≤ amount` (the part of the hold the charge consumed). The request log row
// repeats the overage so an operator finds such requests without joining the ledger.
// ADD COLUMN leaves existing rows NULL, which every CHECK admits: no table rebuild.
export const overage: Migration = {
  version: 5,
  name: 'overage',
  sql: `
ALTER TABLE ledger_entries ADD COLUMN overage INTEGER
  CHECK (overage IS NULL OR (kind = 'charge' AND overage > 0 AND overage <= -amount));
ALTER TABLE request_log ADD COLUMN overage INTEGER CHECK (overage > 0);
`
}
