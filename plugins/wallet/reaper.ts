import type { FastifyBaseLogger } from 'fastify'
import type { LedgerStore } from '../store/ledger/types.js'

/**
 * Releases holds whose expiry passed (their instance died, or their request never settled).
 * Every instance runs one; the ledger makes concurrent reapers safe.
 */
export function reapExpiredHolds (ledger: LedgerStore, intervalMs: number, log: FastifyBaseLogger): { stop (): void } {
  const timer = setInterval(() => {
    ledger.reapExpired().then(
      (n) => { if (n > 0) log.warn({ released: n }, 'released expired holds') },
      (err: unknown) => log.error({ err }, 'hold reaper failed')
    )
  }, intervalMs)
  timer.unref()
  return { stop: () => { clearInterval(timer) } }
}
