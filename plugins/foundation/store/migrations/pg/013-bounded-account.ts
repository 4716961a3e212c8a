import type { Migration } from '../../migrate.js'

// A bounded account (docs/money.md "Overage"): no settle takes a balance below its bound.
//   wallets.bound           the lowest balance the account may reach (wallet.floor − the
//                           overdraft of its tier), as its latest admitted hold was checked
//                           against; NULL until the first hold after this migration (a settle
//                           then treats the available balance it finds as the bound).
//   wallets.unrecovered_at  when a settle last had to leave part of a reported cost unposted;
//                           while set, every hold is refused, and only a top-up clears it.
//   holds / ledger_entries / request_log .unrecovered
//                           the part of a reported cost beyond the bound: not posted, the
//                           operator's loss. NULL when none.
//   holds.overage           the part of the posted charge above the hold (the entry's overage).
// Nullable columns without a default: a catalogue-only change, no table rewrite.
export const boundedAccount: Migration = {
  version: 13,
  name: 'bounded-account',
  sql: `
ALTER TABLE wallets ADD COLUMN bound BIGINT, ADD COLUMN unrecovered_at TIMESTAMPTZ;
ALTER TABLE holds ADD COLUMN overage BIGINT, ADD COLUMN unrecovered BIGINT,
  ADD CONSTRAINT holds_overage_check CHECK (overage IS NULL OR (status = 'posted' AND overage > 0)),
  ADD CONSTRAINT holds_unrecovered_check CHECK (unrecovered IS NULL OR (status = 'posted' AND unrecovered > 0));
ALTER TABLE ledger_entries ADD COLUMN unrecovered BIGINT,
  ADD CONSTRAINT ledger_entries_unrecovered_check CHECK (unrecovered IS NULL OR (kind = 'charge' AND unrecovered > 0));
ALTER TABLE request_log ADD COLUMN unrecovered BIGINT CHECK (unrecovered > 0);
`
}
