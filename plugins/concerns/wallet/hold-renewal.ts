import type { Wallet } from './wallet.js'

/** What the keeper needs of a request's hold (wallet-stage's RequestHold has it). */
export interface KeptHold {
  readonly holdId: string
  /** Set once the hold was settled or released: renewing stops. */
  readonly closed: boolean
}

export interface HoldKeeper {
  /**
   * Renews the hold every ttlMs/3 for as long as its request runs, so a long answer (or a
   * client that reads slowly) never outlives its hold: a settle after the expiry would post
   * nothing. A request shorter than ttlMs/3 costs one timer and no statement.
   */
  keep (hold: KeptHold, ttlMs: number): void
  /** Stops renewing (the hold is about to be settled or released). */
  drop (holdId: string): void
  /** Holds being renewed now (tests, metrics). */
  size (): number
}

export interface HoldKeeperDeps {
  wallet: Pick<Wallet, 'renew'>
  /** Told about a renewal that failed or came too late; never given the amount or the account. */
  warn?: (fields: { holdId: string, reason: string }) => void
}

export function createHoldKeeper (deps: HoldKeeperDeps): HoldKeeper {
  const timers = new Map<string, NodeJS.Timeout>()
  const stop = (holdId: string): void => {
    const timer = timers.get(holdId)
    if (timer === undefined) return
    clearTimeout(timer)
    timers.delete(holdId)
  }
  return {
    keep (hold, ttlMs) {
      stop(hold.holdId)
      const every = Math.max(1, Math.floor(ttlMs / 3))
      const timer = setTimeout(function renew () {
        if (hold.closed || !timers.has(hold.holdId)) { stop(hold.holdId); return }
        deps.wallet.renew(hold.holdId, ttlMs).then((r) => {
          if (!r.renewed) {
            // Closed meanwhile (nothing to do) or expired: the event loop or the database was
            // slower than a third of the TTL; the settle will say NOT_BILLED.
            if (!hold.closed) deps.warn?.({ holdId: hold.holdId, reason: 'the hold had expired before its renewal' })
            stop(hold.holdId)
            return
          }
          if (timers.get(hold.holdId) === timer) timer.refresh()
        }, (err: unknown) => {
          // A failed statement is retried at the next tick; two thirds of the TTL remain.
          deps.warn?.({ holdId: hold.holdId, reason: err instanceof Error ? err.message : 'renewal failed' })
          if (timers.get(hold.holdId) === timer) timer.refresh()
        })
      }, every)
      timer.unref()
      timers.set(hold.holdId, timer)
    },
    drop: stop,
    size: () => timers.size
  }
}
