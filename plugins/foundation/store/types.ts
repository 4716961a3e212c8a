// The store contract. Each interface has a SQLite and a PostgreSQL implementation
// that pass the same contract tests (test/store-*.test.ts).
import type { Database } from 'better-sqlite3'
import type { Pool } from 'pg'
import type { InvalidationBus } from '../keys/invalidation-bus.js'
import type { RequestLogStore } from './request-log/types.js'
import type { LedgerStore } from './ledger/types.js'
import type { JobStore } from './jobs/types.js'
import type { IdempotencyStore } from './idempotency/types.js'

export type AccountStatus = 'active' | 'suspended'

export interface Account {
  id: string
  name: string
  status: AccountStatus
  tier: string
  toppedUp: boolean
  /** Models every key of the account may use (null: all); a key's own list narrows it further. */
  allowedModels: string[] | null
  createdAt: Date
}

export interface ApiKeyRecord {
  id: string
  accountId: string
  name: string
  /** First 8 characters of the plaintext, for display only. */
  prefix: string
  allowedModels: string[] | null
  expiresAt: Date | null
  active: boolean
  revokedAt: Date | null
  /** IANA zone in which the daily caps reset. */
  timezone: string
  /** Spend quota in minor units. */
  quota: bigint | null
  dailySpendCap: bigint | null
  /** 30-day spend cap in minor units. */
  monthlySpendCap: bigint | null
  dailyImageCap: number | null
  tags: string[]
  rateLimitPolicy: string | null
  /** Hash-only `gw_live_` key imported from the old system; cannot be revealed. */
  legacy: boolean
  createdAt: Date
}

/** The settable fields of a key, already validated (see validateKeyInput). */
export interface KeyFields {
  name: string
  allowedModels: string[] | null
  expiresAt: Date | null
  active: boolean
  timezone: string
  quota: bigint | null
  dailySpendCap: bigint | null
  monthlySpendCap: bigint | null
  dailyImageCap: number | null
  tags: string[]
  rateLimitPolicy: string | null
}

export type KeyPatch = Partial<KeyFields>

export type NewKeyInput = { accountId: string } & Partial<KeyFields> & Pick<KeyFields, 'name'>

export interface CreatedKey {
  record: ApiKeyRecord
  /** Shown once to the caller; the store keeps only its hash and sealed form. */
  plaintext: string
}

/** Expected failures are values, not exceptions; `error` names what went wrong. */
export type Result<T, E extends string> = { ok: true; value: T } | { ok: false; error: E }

export interface AccountPatch {
  name?: string
  status?: AccountStatus
  tier?: string
  /** null clears the list (all models). */
  allowedModels?: string[] | null
}

export interface AccountStore {
  create(input: { name: string; tier?: string }): Promise<Account>
  get(id: string): Promise<Account | null>
  /** Oldest first; `after` is the id of the last account of the previous page. */
  list(opts: { limit: number; after?: string }): Promise<Account[]>
  /** Publishes an account invalidation. */
  update(id: string, patch: AccountPatch): Promise<Result<Account, 'not_found'>>
  /** Idempotent; publishes an account invalidation when the flag changes. */
  markToppedUp(id: string): Promise<Result<Account, 'not_found'>>
}

/**
 * The most keys an account may hold that are not revoked (`limits.max_keys_per_account`). The
 * count and the insert happen in one transaction that excludes every other key creation (SQLite:
 * an IMMEDIATE transaction; PostgreSQL: the store revision row's lock), so concurrent creations,
 * from any process, never exceed it.
 */
export interface KeyCap {
  maxKeys: number
}

export interface KeyStore {
  /** `cap`: refused with `key_cap_reached` when the account already holds `cap.maxKeys` keys that are not revoked. */
  create(input: NewKeyInput, cap?: KeyCap): Promise<Result<CreatedKey, 'account_not_found' | 'key_cap_reached'>>
  /** Keys of the account that are not revoked (the ones the cap counts). */
  countLive(accountId: string): Promise<number>
  get(id: string): Promise<ApiKeyRecord | null>
  /** Oldest first, revoked keys included. */
  listByAccount(accountId: string): Promise<ApiKeyRecord[]>
  /** Revoked keys are final and cannot be updated. Publishes a key invalidation. */
  update(id: string, patch: KeyPatch): Promise<Result<ApiKeyRecord, 'not_found' | 'revoked'>>
  /** Idempotent (keeps the first revokedAt); wipes the sealed plaintext. Publishes a key invalidation. */
  revoke(id: string): Promise<Result<ApiKeyRecord, 'not_found'>>
  /** Any state, revoked included: the caller decides what each state answers. */
  findByLookupHash(hash: string): Promise<ApiKeyRecord | null>
  reveal(id: string): Promise<Result<string, 'not_found' | 'not_revealable' | 'revoked'>>
  importLegacy(
    accountId: string,
    plaintext: string,
    fields: Partial<KeyFields> & Pick<KeyFields, 'name'>,
    cap?: KeyCap,
  ): Promise<Result<ApiKeyRecord, 'account_not_found' | 'invalid_key' | 'duplicate' | 'key_cap_reached'>>
}

/** The raw connection, for stores added by other plugins (ledger, request log, jobs). */
export type StoreBackend = { kind: 'sqlite'; db: Database } | { kind: 'pg'; pool: Pool }

export interface Store {
  readonly kind: 'sqlite' | 'pg'
  readonly accounts: AccountStore
  readonly keys: KeyStore
  /** One row per request; written through a RequestLogWriter, never on the hot path. */
  readonly requestLog: RequestLogStore
  /** Prepaid wallets: credits, holds, settlements. */
  readonly ledger: LedgerStore
  /** Asynchronous jobs, owned by their account; billed once when they succeed. */
  readonly jobs: JobStore
  /** Claims of `X-Idempotency-Key`s, per account: one request runs per key. */
  readonly idempotency: IdempotencyStore
  /** Where mutations publish; KeyCache instances subscribe to it. */
  readonly bus: InvalidationBus
  readonly backend: StoreBackend
  /** True when the server secret was auto-created or read from `<dataDir>/gateway.secret`. */
  readonly secretGenerated: boolean
  /** HMAC-SHA256 lookup hash of a plaintext key under this store's server secret. */
  hashKey(plaintext: string): string
  close(): Promise<void>
}
