// The store's revision of keys and accounts (migration 016): a counter every write to a key or
// an account bumps (triggers), read by each running instance about twice a second so that a key
// revoked or an account suspended by another process (the CLI on the same SQLite file, another
// instance on PostgreSQL without Redis) stops working within a second (plugins/concerns/auth/change-watcher.ts).
import type { StoreBackend } from './types.js'

/** What changed after a revision. */
export interface KeyChanges {
  /** The revision these changes run up to: the next `since` starts here. */
  readonly revision: bigint
  /** A key or an account was deleted: nothing names it any more, drop every cached key. */
  readonly all: boolean
  /** Keys written after the revision asked about (created, updated, revoked). */
  readonly keys: readonly string[]
  /** Accounts written after it (status, tier, allowed models…). */
  readonly accounts: readonly string[]
}

export interface KeyChangeFeed {
  /** The current revision: where a new watcher starts. */
  revision(): Promise<bigint>
  /**
   * What changed after `after`, or null when nothing did: the usual answer, one cheap read
   * (SQLite: `PRAGMA data_version`, which moves only when another connection committed;
   * PostgreSQL: the one-row counter).
   */
  since(after: bigint): Promise<KeyChanges | null>
}

interface RevisionRow { value: bigint | string, cleared: bigint | string }
interface ChangedRow { kind: 'key' | 'account', id: string }

const CHANGED_SQL = (p1: string, p2: string): string =>
  `SELECT 'key' AS kind, id FROM api_keys WHERE revision > ${p1} UNION ALL SELECT 'account' AS kind, id FROM accounts WHERE revision > ${p2}`

function changes (row: RevisionRow, after: bigint, changed: readonly ChangedRow[]): KeyChanges {
  const keys: string[] = []
  const accounts: string[] = []
  for (const c of changed) (c.kind === 'key' ? keys : accounts).push(c.id)
  return { revision: BigInt(row.value), all: BigInt(row.cleared) > after, keys, accounts }
}

export function createKeyChangeFeed (backend: StoreBackend): KeyChangeFeed {
  if (backend.kind === 'sqlite') {
    const db = backend.db
    const dataVersion = db.prepare<[], bigint>('PRAGMA data_version').pluck()
    const current = db.prepare<[], RevisionRow>('SELECT value, cleared FROM store_revision WHERE id = 1')
    const changed = db.prepare<[bigint, bigint], ChangedRow>(CHANGED_SQL('?', '?'))
    // This connection's own commits do not move data_version; they reach this instance's cache
    // through its in-process bus. Only other connections' (processes') commits need reading.
    let version = dataVersion.get()
    const read = (): RevisionRow => current.get() ?? { value: 0n, cleared: 0n }
    return {
      async revision () {
        version = dataVersion.get()
        return BigInt(read().value)
      },
      async since (after) {
        const now = dataVersion.get()
        if (now === version) return null
        version = now
        const row = read()
        if (BigInt(row.value) <= after) return null
        return changes(row, after, changed.all(after, after))
      }
    }
  }
  const pool = backend.pool
  const read = async (): Promise<RevisionRow> =>
    (await pool.query<RevisionRow>('SELECT value, cleared FROM store_revision WHERE id = 1')).rows[0] ?? { value: '0', cleared: '0' }
  return {
    async revision () {
      return BigInt((await read()).value)
    },
    async since (after) {
      const row = await read()
      if (BigInt(row.value) <= after) return null
      // Revisions commit in order (the counter row's lock), so every write up to row.value is visible now.
      const { rows } = await pool.query<ChangedRow>(CHANGED_SQL('$1', '$1'), [after.toString()])
      return changes(row, after, rows)
    }
  }
}
