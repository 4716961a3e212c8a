// Ordered PostgreSQL migrations. Append new files here; never edit a released one.
import type { Migration } from '../../migrate.js'
import { accountsKeys } from './001-accounts-keys.js'
import { ledger } from './002-ledger.js'
import { requestLog } from './003-request-log.js'
import { jobHolds } from './004-job-holds.js'
import { overage } from './005-overage.js'
import { jobs } from './006-jobs.js'
import { idempotency } from './007-idempotency.js'
import { holdRenewal } from './008-hold-renewal.js'
import { keyCaps } from './009-key-caps.js'
import { consoleTables } from './010-console.js'
import { modelStatus } from './011-model-status.js'
import { instances } from './012-instances.js'
import { boundedAccount } from './013-bounded-account.js'
import { idempotencyRecovery } from './014-idempotency-recovery.js'
import { consoleAbuse } from './015-console-abuse.js'
import { storeRevision } from './016-store-revision.js'
import { ledgerLayout } from './017-ledger-layout.js'

export const pgMigrations: readonly Migration[] = [
  accountsKeys,
  ledger,
  requestLog,
  jobHolds,
  overage,
  jobs,
  idempotency,
  holdRenewal,
  keyCaps,
  consoleTables,
  modelStatus,
  instances,
  boundedAccount,
  idempotencyRecovery,
  consoleAbuse,
  storeRevision,
  ledgerLayout,
]
