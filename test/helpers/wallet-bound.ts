// What the wallet-bound tests (test/wallet-bound-*.test.ts) share: more keys on the seeded
// account, and the end state every one of them checks — the wallet at or above its floor, the
// ledger consistent, nothing left held, and each charge within its hold (the hold is a bound).
import type { Test } from 'tap'
import type { RequestLogRow } from '../../plugins/foundation/store/request-log/types.js'
import { ledgerState, waitForRows } from './billing.js'
import type { TestGateway } from './gateway.js'

/** `n` more keys of the seeded account (plaintexts), beside the seeded one. */
export async function moreKeys (gw: TestGateway, n: number): Promise<string[]> {
  const out: string[] = []
  for (let i = 0; i < n; i++) {
    const created = await gw.services.store.keys.create({ accountId: gw.account.id, name: `burst key ${i + 2}` })
    if (!created.ok) throw new Error(`creating a key failed: ${created.error}`)
    out.push(created.value.plaintext)
  }
  return out
}

/** The code a refused SDK call carries, whatever the SDK's error shape (OpenAI, Anthropic, GenAI). */
export function refusalCode (err: unknown): string | undefined {
  const e = err as { error?: { code?: unknown, error?: { code?: unknown } }, message?: unknown, headers?: Headers | Record<string, string> } | null
  const code = e?.error?.code ?? e?.error?.error?.code
  if (typeof code === 'string') return code
  // @google/genai puts the envelope's text in the message: its status is the canonical code.
  const m = typeof e?.message === 'string' ? /"status":\s*"([A-Z_]+)"/.exec(e.message) : null
  return m?.[1]
}

/**
 * After a burst: the account's rows (one per request), the wallet at or above `floor`, entries
 * summing to the balance, nothing held, and no charge above its hold (no overage).
 */
export async function checkBounded (t: Test, gws: readonly TestGateway[], requests: number, floor = 0n): Promise<RequestLogRow[]> {
  const gw = gws[0] as TestGateway
  const rows = await waitForRows(gws, requests)
  t.equal(rows.length, requests, `one request log row per request (${requests})`)
  const ledger = await ledgerState(gw)
  t.ok(ledger.balance >= floor, `balance ${ledger.balance} is at or above the floor ${floor}`)
  t.equal(ledger.entriesSum, ledger.balance, 'the ledger entries sum to the balance')
  t.equal(ledger.held, 0n, 'nothing left held')
  t.equal(ledger.openHolds, 0, 'no hold left open')
  const over = rows.filter((r) => r.overage !== null || (r.cost !== null && r.held !== null && r.cost > r.held))
  t.same(over.map((r) => r.requestId), [], 'no charge above its hold')
  const charged = rows.reduce((sum, r) => sum + (r.cost ?? 0n), 0n)
  t.equal(charged, ledger.charged, 'the rows\' costs are the ledger\'s charges')
  return rows
}
