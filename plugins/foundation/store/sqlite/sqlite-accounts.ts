import type { Database } from 'better-sqlite3'
import type { StoreContext } from '../context.js'
import { checkLimit, parseAccountStatus } from '../context.js'
import type { Account, AccountPatch, AccountStore, Result } from '../types.js'

interface AccountRow {
  id: string
  name: string
  status: string
  tier: string
  topped_up: bigint
  allowed_models: string | null
  created_at: bigint
}

function toAccount (row: AccountRow): Account {
  return {
    id: row.id,
    name: row.name,
    status: parseAccountStatus(row.status),
    tier: row.tier,
    toppedUp: row.topped_up === 1n,
    allowedModels: row.allowed_models === null ? null : JSON.parse(row.allowed_models) as string[],
    createdAt: new Date(Number(row.created_at)),
  }
}

export function createSqliteAccountStore (db: Database, ctx: StoreContext): AccountStore {
  const insert = db.prepare<[string, string, string, number], AccountRow>(
    `INSERT INTO accounts (id, name, status, tier, topped_up, created_at)
     VALUES (?, ?, 'active', ?, 0, ?) RETURNING *`
  )
  const byId = db.prepare<[string], AccountRow>('SELECT * FROM accounts WHERE id = ?')
  const page = db.prepare<[string | null, string | null, number], AccountRow>(
    `SELECT * FROM accounts
     WHERE ? IS NULL OR (created_at, id) > (SELECT created_at, id FROM accounts WHERE id = ?)
     ORDER BY created_at, id LIMIT ?`
  )
  const patch = db.prepare<[string | null, string | null, string | null, number, string | null, string], AccountRow>(
    `UPDATE accounts SET name = COALESCE(?, name), status = COALESCE(?, status), tier = COALESCE(?, tier),
       allowed_models = CASE WHEN ? = 1 THEN ? ELSE allowed_models END
     WHERE id = ? RETURNING *`
  )
  const toppedUp = db.prepare<[string], AccountRow>(
    'UPDATE accounts SET topped_up = 1 WHERE id = ? AND topped_up = 0 RETURNING *'
  )

  return {
    async create ({ name, tier }) {
      const row = insert.get(ctx.ids('acct'), name, tier ?? ctx.defaultTier, ctx.clock.now().getTime())
      if (!row) throw new Error('account insert returned no row')
      return toAccount(row)
    },

    async get (id) {
      const row = byId.get(id)
      return row ? toAccount(row) : null
    },

    async list ({ limit, after }) {
      return page.all(after ?? null, after ?? null, checkLimit(limit)).map(toAccount)
    },

    async update (id, changes: AccountPatch): Promise<Result<Account, 'not_found'>> {
      const models = changes.allowedModels
      const row = patch.get(changes.name ?? null, changes.status ?? null, changes.tier ?? null,
        models === undefined ? 0 : 1, models == null ? null : JSON.stringify(models), id)
      if (!row) return { ok: false, error: 'not_found' }
      await ctx.publish({ kind: 'account', id })
      return { ok: true, value: toAccount(row) }
    },

    async markToppedUp (id) {
      const changed = toppedUp.get(id)
      if (changed) {
        await ctx.publish({ kind: 'account', id })
        return { ok: true, value: toAccount(changed) }
      }
      const row = byId.get(id)
      return row ? { ok: true, value: toAccount(row) } : { ok: false, error: 'not_found' }
    },
  }
}
