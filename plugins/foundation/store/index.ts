// The store facade: one entry point, SQLite (embedded, default) or PostgreSQL.
import { randomBytes } from 'node:crypto'
import { LocalInvalidationBus } from '../keys/invalidation-bus.js'
import type { InvalidationBus } from '../keys/invalidation-bus.js'
import type { RandomBytes } from '../keys/key-format.js'
import { resolveServerSecret } from '../keys/server-secret.js'
import { lookupHash } from '../keys/key-crypto.js'
import { type Clock, type IdSource, randomIds, systemClock } from './clock.js'
import type { StoreContext } from './context.js'
import { openPg } from './pg/pg-store.js'
import { openSqlite } from './sqlite/sqlite-store.js'
import type { Store } from './types.js'

export interface OpenStoreOptions {
  /** PostgreSQL when set (DATABASE_URL), else embedded SQLite. */
  databaseUrl?: string | undefined
  /** Embedded database and secret file directory; default `./data`, created if missing. */
  dataDir?: string | undefined
  /** PostgreSQL only: keep every table in this schema (created if missing). */
  schema?: string | undefined
  clock?: Clock
  ids?: IdSource
  random?: RandomBytes
  /**
   * Server secret (GATEWAY_SECRET). When absent: embedded mode reads or creates
   * `<dataDir>/gateway.secret`; PostgreSQL mode refuses to open.
   */
  secret?: string | undefined
  /** Where mutations publish; default an in-process bus owned (and closed) by the store. */
  bus?: InvalidationBus
  /** Tier of accounts created without one; default `free`. */
  defaultTier?: string
  /** A publish failed after its write committed; default: a process warning. */
  onInvalidationError?: (err: Error) => void
  /** PostgreSQL pool size; default 10. */
  poolMax?: number
}

export const DEFAULT_DATA_DIR = './data'

export async function openStore (opts: OpenStoreOptions = {}): Promise<Store> {
  const dataDir = opts.dataDir ?? DEFAULT_DATA_DIR
  const usePg = opts.databaseUrl !== undefined && opts.databaseUrl !== ''
  if (!usePg && opts.schema !== undefined) throw new RangeError('schema applies to PostgreSQL (databaseUrl) only')
  const resolved = resolveServerSecret({ gatewaySecret: opts.secret, dataDir, databaseUrl: opts.databaseUrl })
  const ownsBus = opts.bus === undefined
  const bus = opts.bus ?? new LocalInvalidationBus()
  const onInvalidationError =
    opts.onInvalidationError ?? ((err: Error) => process.emitWarning(`key cache invalidation failed: ${err.message}`))
  const ctx: StoreContext = {
    clock: opts.clock ?? systemClock,
    ids: opts.ids ?? randomIds,
    random: opts.random ?? randomBytes,
    secret: resolved.secret,
    defaultTier: opts.defaultTier ?? 'free',
    async publish (message) {
      try {
        await bus.publish(message)
      } catch (err) {
        onInvalidationError(err instanceof Error ? err : new Error(String(err)))
      }
    },
  }
  const parts =
    usePg && opts.databaseUrl !== undefined
      ? await openPg({ databaseUrl: opts.databaseUrl, schema: opts.schema, poolMax: opts.poolMax }, ctx)
      : openSqlite(dataDir, ctx)
  let closed = false
  return {
    kind: parts.backend.kind,
    accounts: parts.accounts,
    keys: parts.keys,
    requestLog: parts.requestLog,
    ledger: parts.ledger,
    jobs: parts.jobs,
    idempotency: parts.idempotency,
    bus,
    backend: parts.backend,
    secretGenerated: resolved.generated,
    hashKey: (plaintext) => lookupHash(resolved.secret, plaintext),
    async close () {
      if (closed) return
      closed = true
      await parts.close()
      if (ownsBus) await bus.close()
    },
  }
}

export type { Clock, IdSource } from './clock.js'
export { randomIds, systemClock } from './clock.js'
export type * from './types.js'
export type * from './request-log/types.js'
export type * from './ledger/types.js'
export type * from './jobs/types.js'
export type * from './idempotency/types.js'
export { PostingConflictError, UnknownAccountError, UnknownHoldError } from './ledger/index.js'
export { InvalidCursorError } from './request-log/index.js'
export { DEFAULT_MINOR_UNIT_DIGITS, KEY_INPUT_FIELDS, validateKeyInput, validateKeyPatch } from './validate-key-input.js'
export type { KeyInputContext, KeyInputError, KeyInputResult, NewKeyFields } from './validate-key-input.js'
export { MigrationError } from './migrate.js'
export type { Migration } from './migrate.js'
export { pgMigrations } from './migrations/pg/index.js'
export { sqliteMigrations } from './migrations/sqlite/index.js'
