// What a gateway child served, for the bench's report: requests received (raw HTTP server),
// requests the gateway finished (its onFinish), and with billing, the ledger's view. The report
// waits until the server is quiet so settlements that run after the answer are counted.
import type { Server } from 'node:http'
import { setTimeout as sleep } from 'node:timers/promises'
import type { Outcome, RequestContext } from '../../plugins/apps/gateway/index.js'
import type { BillingCounts, ChildReport } from '../ipc.js'

/** How long a report waits for in-flight requests and open holds before it answers anyway. */
const QUIET_TIMEOUT_MS = 15_000
const POLL_MS = 25

export class ServedCounter {
  received = 0
  finished = 0
  finished2xx = 0
  completed2xx = 0

  /** Pass as the gateway's onFinish. */
  readonly onFinish = (_ctx: RequestContext, outcome: Outcome): void => {
    this.finished++
    if (outcome.httpStatus >= 200 && outcome.httpStatus < 300) {
      this.finished2xx++
      if (outcome.kind === 'completed') this.completed2xx++
    }
  }

  /** Counts every request the HTTP server receives, before Fastify sees it. */
  watch (server: Server): void {
    server.on('request', () => { this.received++ })
  }

  /**
   * Waits until every received request finished and `billing` (if any) shows no open hold, two
   * polls in a row, then reports.
   */
  async report (billing?: () => Promise<BillingCounts>): Promise<ChildReport> {
    const deadline = Date.now() + QUIET_TIMEOUT_MS
    let calm = 0
    let counts: BillingCounts | null = null
    for (;;) {
      counts = billing ? await billing() : null
      const idle = this.finished >= this.received && (counts === null || counts.openHolds === 0)
      calm = idle ? calm + 1 : 0
      if (calm >= 2 || Date.now() >= deadline) break
      await sleep(POLL_MS)
    }
    return {
      received: this.received,
      finished: this.finished,
      finished2xx: this.finished2xx,
      completed2xx: this.completed2xx,
      quiet: calm >= 2,
      billing: counts
    }
  }
}
