// Test support for the ledger contract tests: whole-history reads and the invariants
// every test checks after it has moved money. No test-runner dependency.
import type { LedgerEntry } from '../../plugins/foundation/store/ledger/types.js'
import type { Store } from '../../plugins/foundation/store/types.js'

/** Every entry of an account, newest first, read page by page. */
export async function allEntries (store: Store, accountId: string, pageSize = 1000): Promise<LedgerEntry[]> {
  const out: LedgerEntry[] = []
  for (;;) {
    const last = out.at(-1)
    const page = await store.ledger.entries(accountId, { limit: pageSize, ...(last ? { before: last.id } : {}) })
    out.push(...page)
    if (page.length < pageSize) return out
  }
}

export interface LedgerFacts {
  balance: bigint
  held: bigint
  available: bigint
  entriesSum: bigint
  openHoldsSum: bigint
  entries: number
  openHolds: number
}

/** What the wallet says next to what its entries and open holds add up to. */
export async function ledgerFacts (store: Store, accountId: string): Promise<LedgerFacts> {
  const [wallet, entries, open] = await Promise.all([
    store.ledger.wallet(accountId),
    allEntries(store, accountId),
    store.ledger.openHolds(accountId),
  ])
  return {
    balance: wallet.balance,
    held: wallet.held,
    available: wallet.available,
    entriesSum: entries.reduce((sum, e) => sum + e.amount, 0n),
    openHoldsSum: open.reduce((sum, h) => sum + h.amount, 0n),
    entries: entries.length,
    openHolds: open.length,
  }
}

/** Runs raw SQL on the store's database (schema-guard tests). */
export async function execSql (store: Store, sql: string): Promise<void> {
  if (store.backend.kind === 'sqlite') store.backend.db.exec(sql)
  else await store.backend.pool.query(sql)
}

/**
 * The account's bound as the ledger keeps it (the floor of its latest admitted hold; null
 * before any): what the tests hold the available balance against. Read from the wallet row,
 * since the contract does not expose it.
 */
export async function storedBound (store: Store, accountId: string): Promise<bigint | null> {
  const sql = 'SELECT bound FROM wallets WHERE account_id = $1'
  if (store.backend.kind === 'sqlite') {
    const row = store.backend.db.prepare<[string], { bound: bigint | null }>(sql.replace('$1', '?')).get(accountId)
    return row?.bound ?? null
  }
  const { rows } = await store.backend.pool.query<{ bound: string | null }>(sql, [accountId])
  const bound = rows[0]?.bound
  return bound === undefined || bound === null ? null : BigInt(bound)
}

/** JSON with bigints shown as `123n`: a failing property run's values in its message. */
export const showValues = (x: unknown): string => JSON.stringify(x, (_, v: unknown) => (typeof v === 'bigint' ? `${v}n` : v))
