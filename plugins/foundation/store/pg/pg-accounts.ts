import type { Pool } from 'pg'
import type { StoreContext } from '../context.js'
import { checkLimit, parseAccountStatus } from '../context.js'
import type { Account, AccountStore } from '../types.js'

interface AccountRow {
  id: string
  name: string
  status: string
  tier: string
  topped_up: boolean
  allowed_models: string[] | null
  created_at: Date
}

function toAccount (row: AccountRow): Account {
  return {
    id: row.id,
    name: row.name,
    status: parseAccountStatus(row.status),
    tier: row.tier,
    toppedUp: row.topped_up,
    allowedModels: row.allowed_models,
    createdAt: row.created_at,
  }
}

export function createPgAccountStore (pool: Pool, ctx: StoreContext): AccountStore {
  async function one (sql: string, params: unknown[]): Promise<AccountRow | undefined> {
    const { rows } = await pool.query<AccountRow>(sql, params)
    return rows[0]
  }

  return {
    async create ({ name, tier }) {
      const row = await one(
        `INSERT INTO accounts (id, name, status, tier, topped_up, created_at)
         VALUES ($1, $2, 'active', $3, FALSE, $4) RETURNING *`,
        [ctx.ids('acct'), name, tier ?? ctx.defaultTier, ctx.clock.now()]
      )
      if (!row) throw new Error('account insert returned no row')
      return toAccount(row)
    },

    async get (id) {
      const row = await one('SELECT * FROM accounts WHERE id = $1', [id])
      return row ? toAccount(row) : null
    },

    async list ({ limit, after }) {
      const { rows } = await pool.query<AccountRow>(
        `SELECT * FROM accounts
         WHERE $1::text IS NULL OR (created_at, id) > (SELECT created_at, id FROM accounts WHERE id = $1)
         ORDER BY created_at, id LIMIT $2`,
        [after ?? null, checkLimit(limit)]
      )
      return rows.map(toAccount)
    },

    async update (id, changes) {
      const row = await one(
        `UPDATE accounts SET name = COALESCE($1, name), status = COALESCE($2, status), tier = COALESCE($3, tier),
           allowed_models = CASE WHEN $5::boolean THEN $6::text[] ELSE allowed_models END
         WHERE id = $4 RETURNING *`,
        [changes.name ?? null, changes.status ?? null, changes.tier ?? null, id, changes.allowedModels !== undefined, changes.allowedModels ?? null]
      )
      if (!row) return { ok: false, error: 'not_found' }
      await ctx.publish({ kind: 'account', id })
      return { ok: true, value: toAccount(row) }
    },

    async markToppedUp (id) {
      const changed = await one('UPDATE accounts SET topped_up = TRUE WHERE id = $1 AND NOT topped_up RETURNING *', [id])
      if (changed) {
        await ctx.publish({ kind: 'account', id })
        return { ok: true, value: toAccount(changed) }
      }
      const row = await one('SELECT * FROM accounts WHERE id = $1', [id])
      return row ? { ok: true, value: toAccount(row) } : { ok: false, error: 'not_found' }
    },
  }
}
