import type { Database } from 'better-sqlite3'
import { displayPrefix, isLegacyKey } from '../../keys/key-format.js'
import { lookupHash, openKey, safeEqualHex } from '../../keys/key-crypto.js'
import type { StoreContext } from '../context.js'
import { KEY_COLUMNS, newKeyMaterial, patchEntries, withKeyDefaults } from '../context.js'
import type { ApiKeyRecord, KeyCap, KeyFields, KeyStore } from '../types.js'

interface KeyRow {
  id: string
  account_id: string
  name: string
  prefix: string
  lookup_hash: string
  sealed_key: string | null
  allowed_models: string | null
  expires_at: bigint | null
  active: bigint
  revoked_at: bigint | null
  timezone: string
  quota: bigint | null
  daily_spend_cap: bigint | null
  monthly_spend_cap: bigint | null
  daily_image_cap: bigint | null
  tags: string
  rate_limit_policy: string | null
  legacy: bigint
  created_at: bigint
}

type SqlValue = string | number | bigint | null

const date = (ms: bigint | null): Date | null => (ms === null ? null : new Date(Number(ms)))

function stringList (json: string): string[] {
  const parsed: unknown = JSON.parse(json)
  if (!Array.isArray(parsed) || !parsed.every((v) => typeof v === 'string')) {
    throw new Error('api_keys list column does not hold a JSON array of strings')
  }
  return parsed
}

function toRecord (row: KeyRow): ApiKeyRecord {
  return {
    id: row.id,
    accountId: row.account_id,
    name: row.name,
    prefix: row.prefix,
    allowedModels: row.allowed_models === null ? null : stringList(row.allowed_models),
    expiresAt: date(row.expires_at),
    active: row.active === 1n,
    revokedAt: date(row.revoked_at),
    timezone: row.timezone,
    quota: row.quota,
    dailySpendCap: row.daily_spend_cap,
    monthlySpendCap: row.monthly_spend_cap,
    dailyImageCap: row.daily_image_cap === null ? null : Number(row.daily_image_cap),
    tags: stringList(row.tags),
    rateLimitPolicy: row.rate_limit_policy,
    legacy: row.legacy === 1n,
    createdAt: new Date(Number(row.created_at)),
  }
}

function encode (value: KeyFields[keyof KeyFields]): SqlValue {
  if (value === null || typeof value === 'string' || typeof value === 'bigint' || typeof value === 'number') {
    return value
  }
  if (typeof value === 'boolean') return value ? 1 : 0
  if (value instanceof Date) return value.getTime()
  return JSON.stringify(value)
}

function constraintCode (err: unknown): string | undefined {
  return err instanceof Error && 'code' in err && typeof err.code === 'string' ? err.code : undefined
}

const INSERT = `INSERT INTO api_keys (id, account_id, name, prefix, lookup_hash, sealed_key, allowed_models,
  expires_at, active, timezone, quota, daily_spend_cap, monthly_spend_cap, daily_image_cap, tags,
  rate_limit_policy, legacy, created_at)
  VALUES (@id, @account_id, @name, @prefix, @lookup_hash, @sealed_key, @allowed_models, @expires_at,
  @active, @timezone, @quota, @daily_spend_cap, @monthly_spend_cap, @daily_image_cap, @tags,
  @rate_limit_policy, @legacy, @created_at) RETURNING *`

export function createSqliteKeyStore (db: Database, ctx: StoreContext): KeyStore {
  const insert = db.prepare<[Record<string, SqlValue>], KeyRow>(INSERT)
  const byId = db.prepare<[string], KeyRow>('SELECT * FROM api_keys WHERE id = ?')
  const byAccount = db.prepare<[string], KeyRow>(
    'SELECT * FROM api_keys WHERE account_id = ? ORDER BY created_at, id'
  )
  const byHash = db.prepare<[string], KeyRow>('SELECT * FROM api_keys WHERE lookup_hash = ?')
  const live = db.prepare<[string], bigint>('SELECT count(*) FROM api_keys WHERE account_id = ? AND revoked_at IS NULL').pluck()
  const revoke = db.prepare<[number, string], KeyRow>(
    'UPDATE api_keys SET revoked_at = COALESCE(revoked_at, ?), sealed_key = NULL WHERE id = ? RETURNING *'
  )

  function insertRow (
    id: string,
    accountId: string,
    fields: KeyFields,
    material: { prefix: string; lookupHash: string; sealed: string | null },
    legacy: boolean
  ): KeyRow {
    const params: Record<string, SqlValue> = {
      id,
      account_id: accountId,
      prefix: material.prefix,
      lookup_hash: material.lookupHash,
      sealed_key: material.sealed,
      legacy: legacy ? 1 : 0,
      created_at: ctx.clock.now().getTime(),
    }
    for (const [field, value] of patchEntries(fields)) params[KEY_COLUMNS[field]] = encode(value)
    const row = insert.get(params)
    if (!row) throw new Error('api key insert returned no row')
    return row
  }

  type InsertArgs = Parameters<typeof insertRow>
  // IMMEDIATE: the write lock is taken before the count, so a creation in another process (the
  // CLI, a second instance on the same file) cannot count the same keys and insert past the cap.
  const cappedInsert = db.transaction((maxKeys: number, args: InsertArgs): KeyRow | 'key_cap_reached' => {
    if (Number(live.get(args[1]) ?? 0n) >= maxKeys) return 'key_cap_reached'
    return insertRow(...args)
  })
  const insertUnder = (cap: KeyCap | undefined, ...args: InsertArgs): KeyRow | 'key_cap_reached' => {
    if (cap === undefined) return insertRow(...args)
    // An account already at its cap is refused on a plain read, without the write lock that the
    // ledger's batches need too.
    if (Number(live.get(args[1]) ?? 0n) >= cap.maxKeys) return 'key_cap_reached'
    return cappedInsert.immediate(cap.maxKeys, args)
  }

  return {
    async create (input, cap) {
      const id = ctx.ids('key')
      const material = newKeyMaterial(ctx, id)
      try {
        const row = insertUnder(cap, id, input.accountId, withKeyDefaults(input), material, false)
        if (row === 'key_cap_reached') return { ok: false, error: row }
        // Instances that remember this key's hash as unknown (negative cache) forget it now.
        await ctx.publish({ kind: 'key', id })
        return { ok: true, value: { record: toRecord(row), plaintext: material.plaintext } }
      } catch (err) {
        if (constraintCode(err) === 'SQLITE_CONSTRAINT_FOREIGNKEY') return { ok: false, error: 'account_not_found' }
        throw err
      }
    },

    async countLive (accountId) {
      return Number(live.get(accountId) ?? 0n)
    },

    async get (id) {
      const row = byId.get(id)
      return row ? toRecord(row) : null
    },

    async listByAccount (accountId) {
      return byAccount.all(accountId).map(toRecord)
    },

    async update (id, patch) {
      const entries = patchEntries(patch)
      if (entries.length === 0) {
        const row = byId.get(id)
        if (!row) return { ok: false, error: 'not_found' }
        return row.revoked_at === null ? { ok: true, value: toRecord(row) } : { ok: false, error: 'revoked' }
      }
      // Column names come from KEY_COLUMNS, never from the caller.
      const sets = entries.map(([field]) => `${KEY_COLUMNS[field]} = ?`).join(', ')
      const row = db
        .prepare<SqlValue[], KeyRow>(`UPDATE api_keys SET ${sets} WHERE id = ? AND revoked_at IS NULL RETURNING *`)
        .get(...entries.map(([, value]) => encode(value)), id)
      if (!row) return { ok: false, error: byId.get(id) ? 'revoked' : 'not_found' }
      await ctx.publish({ kind: 'key', id })
      return { ok: true, value: toRecord(row) }
    },

    async revoke (id) {
      const row = revoke.get(ctx.clock.now().getTime(), id)
      if (!row) return { ok: false, error: 'not_found' }
      await ctx.publish({ kind: 'key', id })
      return { ok: true, value: toRecord(row) }
    },

    async findByLookupHash (hash) {
      const row = byHash.get(hash)
      return row && safeEqualHex(row.lookup_hash, hash) ? toRecord(row) : null
    },

    async reveal (id) {
      const row = byId.get(id)
      if (!row) return { ok: false, error: 'not_found' }
      if (row.revoked_at !== null) return { ok: false, error: 'revoked' }
      if (row.legacy === 1n || row.sealed_key === null) return { ok: false, error: 'not_revealable' }
      return { ok: true, value: openKey(ctx.secret, row.id, row.sealed_key) }
    },

    async importLegacy (accountId, plaintext, fields, cap) {
      if (!isLegacyKey(plaintext)) return { ok: false, error: 'invalid_key' }
      const material = {
        prefix: displayPrefix(plaintext),
        lookupHash: lookupHash(ctx.secret, plaintext),
        sealed: null,
      }
      try {
        const row = insertUnder(cap, ctx.ids('key'), accountId, withKeyDefaults(fields), material, true)
        if (row === 'key_cap_reached') return { ok: false, error: row }
        await ctx.publish({ kind: 'key', id: row.id })
        return { ok: true, value: toRecord(row) }
      } catch (err) {
        const code = constraintCode(err)
        if (code === 'SQLITE_CONSTRAINT_FOREIGNKEY') return { ok: false, error: 'account_not_found' }
        if (code === 'SQLITE_CONSTRAINT_UNIQUE') return { ok: false, error: 'duplicate' }
        throw err
      }
    },
  }
}
