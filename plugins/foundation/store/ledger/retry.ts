/**
 * Retries a ledger write. Settle and release are exactly-once per hold in the ledger, so a retry
 * after a lost acknowledgement changes nothing, and a transient database failure does not leave
 * a served request (or a finished job) to the reaper, which would release its hold unbilled.
 */
export async function withLedgerRetry<T> (op: () => Promise<T>, attempts = 5, delayMs = 100): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await op()
    } catch (err) {
      if (i >= attempts) throw err
      await new Promise((resolve) => setTimeout(resolve, delayMs * 2 ** (i - 1)))
    }
  }
}
