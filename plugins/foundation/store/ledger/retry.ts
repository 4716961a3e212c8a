/**
 * Retries a ledger write. Settle and release are exactly-once per hold in the ledger, so a retry
 * after a lost acknowledgement changes nothing, and a transient database failure does not leave
 * a served request (or a finished job) to the reaper, which would release its hold unbilled.
 *
 * The first attempt's promise is passed on with a handler for its failure: no async frame or
 * extra turn on the path every settle takes. `op` throwing at once counts as a failed attempt.
 */
export function withLedgerRetry<T> (op: () => Promise<T>, attempts = 5, delayMs = 100): Promise<T> {
  const attempt = (i: number): Promise<T> => {
    let p: Promise<T>
    try {
      p = op()
    } catch (err) {
      p = Promise.reject(err)
    }
    if (i >= attempts) return p
    return p.catch(async () => {
      await new Promise((resolve) => setTimeout(resolve, delayMs * 2 ** (i - 1)))
      return await attempt(i + 1)
    })
  }
  return attempt(1)
}
