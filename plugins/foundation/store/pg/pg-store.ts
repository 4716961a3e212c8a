import pg from 'pg'
import type { StoreContext } from '../context.js'
import { createPgJobStore } from '../jobs/pg-jobs.js'
import type { JobStore } from '../jobs/types.js'
import { createPgIdempotencyStore } from '../idempotency/pg-idempotency.js'
import type { IdempotencyStore } from '../idempotency/types.js'
import { createPgLedgerStore } from '../ledger/pg-ledger.js'
import type { LedgerStore } from '../ledger/types.js'
import { pgMigrations } from '../migrations/pg/index.js'
import { createPgRequestLogStore } from '../request-log/pg-request-log.js'
import type { RequestLogStore } from '../request-log/types.js'
import type { AccountStore, KeyStore, StoreBackend } from '../types.js'
import { createPgAccountStore } from './pg-accounts.js'
import { createPgKeyStore } from './pg-keys.js'
import { SCHEMA_NAME, runPgMigrations } from './pg-migrate.js'

export interface PgParts {
  backend: StoreBackend
  accounts: AccountStore
  keys: KeyStore
  requestLog: RequestLogStore
  ledger: LedgerStore
  jobs: JobStore
  idempotency: IdempotencyStore
  close(): Promise<void>
}

export interface OpenPgOptions {
  databaseUrl: string
  schema?: string | undefined
  poolMax?: number | undefined
  onPoolError?: ((err: Error) => void) | undefined
}

export async function openPg (opts: OpenPgOptions, ctx: StoreContext): Promise<PgParts> {
  const { schema } = opts
  if (schema !== undefined && !SCHEMA_NAME.test(schema)) {
    throw new RangeError(`schema must match ${SCHEMA_NAME} (got ${JSON.stringify(schema)})`)
  }
  const pool = new pg.Pool({
    connectionString: opts.databaseUrl,
    max: opts.poolMax ?? 10,
    // A startup parameter, so the search_path is set before any query on every
    // pooled connection, including ones the pool opens later.
    ...(schema !== undefined ? { options: `-c search_path=${schema}` } : {}),
  })
  // An idle client losing its connection emits here; without a listener it would crash the process.
  pool.on('error', opts.onPoolError ?? ((err) => process.emitWarning(`postgres pool: ${err.message}`)))
  try {
    await runPgMigrations(pool, pgMigrations, schema)
  } catch (err) {
    await pool.end()
    throw err
  }
  const ledger = createPgLedgerStore(pool, ctx)
  return {
    backend: { kind: 'pg', pool },
    accounts: createPgAccountStore(pool, ctx),
    keys: createPgKeyStore(pool, ctx),
    requestLog: createPgRequestLogStore(pool),
    ledger,
    jobs: createPgJobStore(pool),
    idempotency: createPgIdempotencyStore(pool, ctx.clock),
    // Queued holds and settles are answered before the pool goes.
    close: async () => {
      await ledger.close()
      await pool.end()
    },
  }
}
