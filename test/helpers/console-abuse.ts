// The console attacked many times over, against a running gateway on one store: what the two
// abuse suites share (helpers/console-abuse-codes-suite.ts, helpers/console-abuse-signin-suite.ts;
// two files per store keep each under tap's file timeout on a loaded machine).
import type { Test } from 'tap'
import { openConsoleStore, type ConsoleStore } from '../../plugins/apps/console/index.js'
import type { ConsoleConfig } from '../../plugins/foundation/config/types.js'
import { startTestGateway, type Backend, type TestGateway } from './gateway.js'
import { ManualClock } from './store.js'
import { CONSOLE_ADMIN_TOKEN, consoleTestConfig, type ErrorBody } from './console-api-suite.js'

/** The budgets the abuse suites run against (small, so each is run through quickly). */
export const ABUSE_BUDGETS = {
  verification_max_attempts: 5,
  code_guesses_per_email_per_hour: 12,
  mails_per_email_per_hour: 4,
  mail_requests_per_address_per_hour: 50,
  signups_per_address_per_hour: 3,
  human_check_after_failures: 2,
  signin_max_failures: 5,
  signin_max_failures_per_email: 4,
  signin_failure_window_ms: 60_000,
  password_hash_queue: 4
} as const

/** A six-digit code that is not `code`. */
export function wrongCode (code: string, seed: number): string {
  const guess = String((Number(code) + 1 + seed * 7919) % 1_000_000).padStart(6, '0')
  return guess === code ? String((Number(code) + 2) % 1_000_000).padStart(6, '0') : guess
}

export const withoutId = (b: ErrorBody): unknown => ({ ...b.error, request_id: null })

export interface AbuseGateway {
  gw: TestGateway
  clock: ManualClock
  /** Every log line the gateway wrote (JSON). */
  lines: string[]
  consoleStore: ConsoleStore
  cfg: ConsoleConfig
  countAccounts (): Promise<number>
}

/** A gateway with the abuse budgets (and console `settings` over them), 127.0.0.1 as trusted proxy, a manual clock and its log captured. */
export async function abuseGateway (t: Test, backend: Backend, settings: Record<string, unknown> = {}): Promise<AbuseGateway> {
  const configFile = consoleTestConfig({ ...ABUSE_BUDGETS, ...settings })
  t.teardown(configFile.remove)
  const clock = new ManualClock(new Date())
  const lines: string[] = []
  const gw = await startTestGateway({
    backend,
    configFile: configFile.file,
    services: { clock },
    server: { adminToken: CONSOLE_ADMIN_TOKEN, logger: { level: 'info', stream: { write: (line: string) => { lines.push(line) } } } }
  })
  t.teardown(() => gw.close())
  return {
    gw,
    clock,
    lines,
    consoleStore: openConsoleStore(gw.services.store.backend),
    cfg: gw.config.console,
    async countAccounts () {
      const b = gw.services.store.backend
      return b.kind === 'sqlite'
        ? Number((b.db.prepare('SELECT count(*) AS n FROM accounts').get() as { n: number | bigint }).n)
        : Number((await b.pool.query<{ n: string }>('SELECT count(*) AS n FROM accounts')).rows[0]?.n)
    }
  }
}
