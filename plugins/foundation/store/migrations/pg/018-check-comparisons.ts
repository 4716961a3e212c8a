import type { Migration } from '../../migrate.js'

// The SQLite twin rewrites the CHECKs of holds, ledger_entries and key_usage from `IN (…)`
// lists to comparisons joined by OR, because SQLite builds a temporary B-tree for a
// list of more than two values each time such a CHECK runs. PostgreSQL compares a list of
// constants in place (a scalar array comparison), so its tables stay as they are.
export const checkComparisons: Migration = {
  version: 18,
  name: 'check-comparisons',
  sql: '-- nothing changes on PostgreSQL (see the comment above)',
}
