import type { Pool } from 'pg'
import { displayPrefix, isLegacyKey } from '../../keys/key-format.js'
import { lookupHash, openKey, safeEqualHex } from '../../keys/key-crypto.js'
import type { StoreContext } from '../context.js'
import { KEY_COLUMNS, newKeyMaterial, patchEntries, withKeyDefaults } from '../context.js'
import type { ApiKeyRecord, KeyCap, KeyFields, KeyStore } from '../types.js'
import { inTransaction } from './transaction.js'

interface KeyRow {
  id: string
  account_id: string
  name: string
  prefix: string
  lookup_hash: string
  sealed_key: string | null
  allowed_models: string[] | null
  expires_at: Date | null
  active: boolean
  revoked_at: Date | null
  timezone: string
  // pg returns BIGINT as text so no precision is lost on the way.
  quota: string | null
  daily_spend_cap: string | null
  monthly_spend_cap: string | null
  daily_image_cap: number | null
  tags: string[]
  rate_limit_policy: string | null
  legacy: boolean
  created_at: Date
}

const big = (value: string | null): bigint | null => (value === null ? null : BigInt(value))

function toRecord (row: KeyRow): ApiKeyRecord {
  return {
    id: row.id,
    accountId: row.account_id,
    name: row.name,
    prefix: row.prefix,
    allowedModels: row.allowed_models,
    expiresAt: row.expires_at,
    active: row.active,
    revokedAt: row.revoked_at,
    timezone: row.timezone,
    quota: big(row.quota),
    dailySpendCap: big(row.daily_spend_cap),
    monthlySpendCap: big(row.monthly_spend_cap),
    dailyImageCap: row.daily_image_cap,
    tags: row.tags,
    rateLimitPolicy: row.rate_limit_policy,
    legacy: row.legacy,
    createdAt: row.created_at,
  }
}

function pgErrorCode (err: unknown): string | undefined {
  const code: unknown = err instanceof Error ? Reflect.get(err, 'code') : undefined
  return typeof code === 'string' ? code : undefined
}

const LIVE_SQL = 'SELECT count(*) AS n FROM api_keys WHERE account_id = $1 AND revoked_at IS NULL'
const FOREIGN_KEY_VIOLATION = '23503'
const UNIQUE_VIOLATION = '23505'

export function createPgKeyStore (pool: Pool, ctx: StoreContext): KeyStore {
  async function one (sql: string, params: unknown[]): Promise<KeyRow | undefined> {
    const { rows } = await pool.query<KeyRow>(sql, params)
    return rows[0]
  }

  async function countLive (accountId: string): Promise<number> {
    const { rows } = await pool.query<{ n: string }>(LIVE_SQL, [accountId])
    return Number(rows[0]?.n ?? 0)
  }

  async function insertRow (
    id: string,
    accountId: string,
    fields: KeyFields,
    material: { prefix: string; lookupHash: string; sealed: string | null },
    legacy: boolean,
    cap?: KeyCap
  ): Promise<KeyRow | 'key_cap_reached'> {
    const columns = ['id', 'account_id', 'prefix', 'lookup_hash', 'sealed_key', 'legacy', 'created_at']
    const values: unknown[] = [id, accountId, material.prefix, material.lookupHash, material.sealed, legacy, ctx.clock.now()]
    for (const [field, value] of patchEntries(fields)) {
      columns.push(KEY_COLUMNS[field])
      values.push(value)
    }
    const placeholders = values.map((_, i) => `$${i + 1}`).join(', ')
    const sql = `INSERT INTO api_keys (${columns.join(', ')}) VALUES (${placeholders}) RETURNING *`
    // An account already at its cap is refused on a plain count, without the lock: a client
    // that keeps asking at the cap cannot hold up every key write of the cluster.
    if (cap !== undefined && await countLive(accountId) >= cap.maxKeys) return 'key_cap_reached'
    const row = cap === undefined
      ? await one(sql, values)
      : await inTransaction(pool, async (client) => {
        // Every key creation under a cap takes the store revision row's lock first (the one
        // the insert's trigger takes anyway, so the lock order never inverts), then counts: two
        // creations, from any instance or the CLI, never count the same keys.
        await client.query('SELECT 1 FROM store_revision WHERE id = 1 FOR UPDATE')
        const { rows } = await client.query<{ n: string }>(LIVE_SQL, [accountId])
        if (Number(rows[0]?.n ?? 0) >= cap.maxKeys) return 'key_cap_reached' as const
        return (await client.query<KeyRow>(sql, values)).rows[0]
      })
    if (!row) throw new Error('api key insert returned no row')
    return row
  }

  return {
    async create (input, cap) {
      const id = ctx.ids('key')
      const material = newKeyMaterial(ctx, id)
      try {
        const row = await insertRow(id, input.accountId, withKeyDefaults(input), material, false, cap)
        if (row === 'key_cap_reached') return { ok: false, error: row }
        // Instances that remember this key's hash as unknown (negative cache) forget it now.
        await ctx.publish({ kind: 'key', id })
        return { ok: true, value: { record: toRecord(row), plaintext: material.plaintext } }
      } catch (err) {
        if (pgErrorCode(err) === FOREIGN_KEY_VIOLATION) return { ok: false, error: 'account_not_found' }
        throw err
      }
    },

    countLive,

    async get (id) {
      const row = await one('SELECT * FROM api_keys WHERE id = $1', [id])
      return row ? toRecord(row) : null
    },

    async listByAccount (accountId) {
      const { rows } = await pool.query<KeyRow>(
        'SELECT * FROM api_keys WHERE account_id = $1 ORDER BY created_at, id',
        [accountId]
      )
      return rows.map(toRecord)
    },

    async update (id, patch) {
      const entries = patchEntries(patch)
      if (entries.length === 0) {
        const row = await one('SELECT * FROM api_keys WHERE id = $1', [id])
        if (!row) return { ok: false, error: 'not_found' }
        return row.revoked_at === null ? { ok: true, value: toRecord(row) } : { ok: false, error: 'revoked' }
      }
      // Column names come from KEY_COLUMNS, never from the caller.
      const sets = entries.map(([field], i) => `${KEY_COLUMNS[field]} = $${i + 1}`).join(', ')
      const row = await one(
        `UPDATE api_keys SET ${sets} WHERE id = $${entries.length + 1} AND revoked_at IS NULL RETURNING *`,
        [...entries.map(([, value]) => value), id]
      )
      if (!row) {
        const exists = await one('SELECT * FROM api_keys WHERE id = $1', [id])
        return { ok: false, error: exists ? 'revoked' : 'not_found' }
      }
      await ctx.publish({ kind: 'key', id })
      return { ok: true, value: toRecord(row) }
    },

    async revoke (id) {
      const row = await one(
        'UPDATE api_keys SET revoked_at = COALESCE(revoked_at, $1), sealed_key = NULL WHERE id = $2 RETURNING *',
        [ctx.clock.now(), id]
      )
      if (!row) return { ok: false, error: 'not_found' }
      await ctx.publish({ kind: 'key', id })
      return { ok: true, value: toRecord(row) }
    },

    async findByLookupHash (hash) {
      const row = await one('SELECT * FROM api_keys WHERE lookup_hash = $1', [hash])
      return row && safeEqualHex(row.lookup_hash, hash) ? toRecord(row) : null
    },

    async reveal (id) {
      const row = await one('SELECT * FROM api_keys WHERE id = $1', [id])
      if (!row) return { ok: false, error: 'not_found' }
      if (row.revoked_at !== null) return { ok: false, error: 'revoked' }
      if (row.legacy || row.sealed_key === null) return { ok: false, error: 'not_revealable' }
      return { ok: true, value: openKey(ctx.secret, row.id, row.sealed_key) }
    },

    async importLegacy (accountId, plaintext, fields, cap) {
      if (!isLegacyKey(plaintext)) return { ok: false, error: 'invalid_key' }
      const material = { prefix: displayPrefix(plaintext), lookupHash: lookupHash(ctx.secret, plaintext), sealed: null }
      try {
        const row = await insertRow(ctx.ids('key'), accountId, withKeyDefaults(fields), material, true, cap)
        if (row === 'key_cap_reached') return { ok: false, error: row }
        await ctx.publish({ kind: 'key', id: row.id })
        return { ok: true, value: toRecord(row) }
      } catch (err) {
        const code = pgErrorCode(err)
        if (code === FOREIGN_KEY_VIOLATION) return { ok: false, error: 'account_not_found' }
        if (code === UNIQUE_VIOLATION) return { ok: false, error: 'duplicate' }
        throw err
      }
    },
  }
}
