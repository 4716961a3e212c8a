// The wallet ledger: holds, settlements and credits over the store's database.
export type * from './types.js'
export {
  CHARGE_POSTING_PREFIX,
  MAX_LEDGER_AMOUNT,
  PostingConflictError,
  UnknownAccountError,
  UnknownHoldError,
} from './ledger-input.js'
export { GroupCommit } from './group-commit.js'
export type { GroupCommitOptions, ItemOutcome } from './group-commit.js'
export { DEFAULT_PG_BATCH, createPgLedgerStore } from './pg-ledger.js'
export type { PgLedger, PgLedgerOptions } from './pg-ledger.js'
export { createSqliteLedgerStore } from './sqlite-ledger.js'
export { capPeriods, hasCaps, localDay, startOfLocalDay, utcDay, addDays, SPEND_WINDOW_DAYS } from './caps.js'
export type { CapRefusal, HoldCaps } from './caps.js'
