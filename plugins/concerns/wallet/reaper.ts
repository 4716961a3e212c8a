import type { FastifyBaseLogger } from 'fastify'
import type { Wallet } from './wallet.js'

/**
 * Releases holds whose expiry passed (their instance died, or their request never settled).
 * Every instance runs one, through the wallet; the ledger makes concurrent reapers safe.
 */
export function reapExpiredHolds (wallet: Pick<Wallet, 'reapExpired'>, intervalMs: number, log: FastifyBaseLogger): { stop (): void } {
  const timer = setInterval(() => {
    wallet.reapExpired().then(
      (n) => { if (n > 0) log.warn({ released: n }, 'released expired holds') },
      (err: unknown) => log.error({ err }, 'hold reaper failed')
    )
  }, intervalMs)
  timer.unref()
  return { stop: () => { clearInterval(timer) } }
}
