// What the framework-client tests (test/clients-*.test.ts) check after each call: the request
// log row it left, read back from the real store, with the cost that the usage the client itself
// reported implies (prices read from gateway.yaml by test/helpers/billing.ts, not by the gateway).
import type { Test } from 'tap'
import type { RequestLogRow } from '../../plugins/foundation/store/request-log/types.js'
import { accountRows, expectedCost, priceOf, sleep, type Units } from './billing.js'
import type { TestGateway } from './gateway.js'

/** The assertions these helpers and their callers use; both the root `t` and subtests have them. */
export type Assert = Pick<Test, 'equal' | 'match' | 'ok'>

/** Hands out the request log rows of the seeded account one by one, in the order the calls were made. */
export interface RowReader {
  /** The row of the one call made since the previous `next()`; throws if there is none or more than one. */
  next (timeoutMs?: number): Promise<RequestLogRow>
}

export function requestLogReader (gw: TestGateway): RowReader {
  const seen = new Set<string>()
  return {
    async next (timeoutMs = 15_000): Promise<RequestLogRow> {
      const deadline = Date.now() + timeoutMs
      for (;;) {
        await gw.services.requestLog.flush()
        const fresh = (await accountRows(gw)).filter((r) => !seen.has(r.requestId))
        if (fresh.length > 1) throw new Error(`one call left ${fresh.length} request log rows (a client retry?)`)
        const row = fresh[0]
        if (row !== undefined) {
          seen.add(row.requestId)
          return row
        }
        if (Date.now() > deadline) throw new Error(`no new request log row after ${timeoutMs} ms`)
        await sleep(10)
      }
    }
  }
}

export interface BilledCall {
  /** The declared route the call reached, e.g. `POST /v1/chat/completions`. */
  route: string
  model: string
  stream: boolean
  /** Billable quantities as the client reported them to its caller. */
  units: Units
}

/**
 * The row of a successful call: the model asked and answered, usage as the upstream reported
 * it (equal to what the client saw), and the cost that usage implies at the catalogue's price.
 */
export function assertBilled (t: Assert, row: RequestLogRow, call: BilledCall): void {
  t.equal(row.route, call.route, 'request log: route')
  t.equal(row.requestedModel, call.model, 'request log: requested model')
  t.equal(row.answeredModel, call.model, 'request log: answered model')
  t.equal(row.status, 200, 'request log: HTTP 200')
  t.equal(row.stream, call.stream, 'request log: stream flag')
  t.equal(row.billingStatus, 'BILLED', 'request log: billed')
  t.equal(row.usageReported, true, 'request log: usage reported by the upstream, not estimated')
  const u = call.units
  const usage = row.usage
  if (u.inputTokens !== undefined) t.equal(usage?.inputTokens, u.inputTokens, 'request log: input tokens the client saw')
  if (u.outputTokens !== undefined) t.equal(usage?.outputTokens, u.outputTokens, 'request log: output tokens the client saw')
  if (u.images !== undefined) t.equal(usage?.images, u.images, 'request log: images the client received')
  if (u.characters !== undefined) t.equal(usage?.characters, u.characters, 'request log: characters the client sent')
  t.equal(row.cost, expectedCost(priceOf(call.model), u), 'request log: the cost this usage implies')
}

/** The row of a call the gateway refused before any upstream call or hold. */
export function assertRefused (t: Assert, row: RequestLogRow, route: string, model: string, code: string, status: number): void {
  t.equal(row.route, route, 'request log: route')
  t.equal(row.requestedModel, model, 'request log: requested model')
  t.equal(row.status, status, `request log: HTTP ${status}`)
  t.equal(row.errorCode, code, `request log: ${code}`)
  t.equal(row.billingStatus, 'NOT_BILLED', 'request log: not billed')
  t.equal(row.cost, null, 'request log: no cost')
  t.equal(row.holdId, null, 'request log: no hold')
}
