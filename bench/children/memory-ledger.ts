// For the gateway-nostore bound (targets.ts): the hot path's storage writes taken out, nothing
// else. Holds, settles and releases are decided in memory by the same rule as the ledger
// (balance − held − amount ≥ floor; post up to the bound and release the rest), and the
// request log writer's rows are validated and queued as usual, then dropped instead of
// inserted. Every other store call goes to the real store. A measuring device, not a mode of
// the gateway: a crash would lose every charge it made.
import { UnknownHoldError } from '../../plugins/foundation/store/ledger/ledger-input.js'
import type { LedgerStore, RenewResult, SettleResult } from '../../plugins/foundation/store/ledger/types.js'
import type { RequestLogStore } from '../../plugins/foundation/store/request-log/types.js'

/** An open hold; a closed one is forgotten (the gateway never closes a hold twice). */
interface MemoryHold { accountId: string, amount: bigint, requestId: string, expiresAt: Date }
/** A wallet as this ledger keeps it: `bound` is the floor of its latest admitted hold. */
interface MemoryWallet { balance: bigint, held: bigint, bound: bigint | null }

export class MemoryHotLedger implements LedgerStore {
  /** Charges posted (settles that posted more than 0) and their sum. */
  charges = 0
  spent = 0n
  private readonly holds = new Map<string, MemoryHold>()
  private readonly balances = new Map<string, MemoryWallet>()
  private next = 0

  constructor (private readonly real: LedgerStore) {}

  /** Holds not closed yet. */
  openCount (): number {
    return this.holds.size
  }

  private async walletOf (accountId: string): Promise<MemoryWallet> {
    let w = this.balances.get(accountId)
    if (!w) {
      const real = await this.real.wallet(accountId)
      w = this.balances.get(accountId) ?? { balance: real.balance, held: real.held, bound: null }
      this.balances.set(accountId, w)
    }
    return w
  }

  async hold (input: Parameters<LedgerStore['hold']>[0]): ReturnType<LedgerStore['hold']> {
    const w = await this.walletOf(input.accountId)
    if (w.balance - w.held - input.amount < input.floor) return { ok: false, error: 'insufficient_funds' }
    w.held += input.amount
    w.bound = input.floor
    const holdId = `hold_mem${++this.next}`
    const expiresAt = new Date(Date.now() + input.ttlMs)
    this.holds.set(holdId, { accountId: input.accountId, amount: input.amount, requestId: input.requestId, expiresAt })
    return { ok: true, holdId, expiresAt }
  }

  private close (holdId: string, amount: bigint | null): SettleResult {
    const h = this.holds.get(holdId)
    if (!h) throw new UnknownHoldError(holdId)
    this.holds.delete(holdId)
    const w = this.balances.get(h.accountId)
    if (!w) throw new Error(`wallet of ${holdId} vanished`)
    // Up to the hold plus the slack above the account's bound, like the stores.
    const slack = w.balance - w.held - (w.bound ?? w.balance - w.held)
    const most = h.amount + (slack > 0n ? slack : 0n)
    const asked = amount ?? 0n
    const posted = asked < most ? asked : most
    const used = posted < h.amount ? posted : h.amount
    w.held -= h.amount
    w.balance -= posted
    if (posted > 0n) {
      this.charges++
      this.spent += posted
    }
    return { posted, released: h.amount - used, overage: posted - used, unrecovered: asked - posted, duplicate: false }
  }

  async settle (input: Parameters<LedgerStore['settle']>[0]): Promise<SettleResult> {
    return this.close(input.holdId, input.amount)
  }

  async release (holdId: string): ReturnType<LedgerStore['release']> {
    const { released, duplicate } = this.close(holdId, null)
    return { released, duplicate }
  }

  async renew (holdId: string, ttlMs: number): Promise<RenewResult> {
    const h = this.holds.get(holdId)
    if (!h) throw new UnknownHoldError(holdId)
    const now = Date.now()
    if (h.expiresAt.getTime() <= now) return { renewed: false, expiresAt: null }
    h.expiresAt = new Date(Math.max(h.expiresAt.getTime(), now + ttlMs))
    return { renewed: true, expiresAt: h.expiresAt }
  }

  credit (input: Parameters<LedgerStore['credit']>[0]): ReturnType<LedgerStore['credit']> { return this.real.credit(input) }
  reapExpired (): Promise<number> { return this.real.reapExpired() }
  wallet (accountId: string): ReturnType<LedgerStore['wallet']> { return this.real.wallet(accountId) }
  entries (accountId: string, opts: Parameters<LedgerStore['entries']>[1]): ReturnType<LedgerStore['entries']> { return this.real.entries(accountId, opts) }
  /** The bench's keys have no caps: usage questions go to the real store. */
  async keyUsage (keyId: string, fromDay: string): ReturnType<LedgerStore['keyUsage']> {
    return await this.real.keyUsage(keyId, fromDay)
  }

  async resetKeyUsage (keyId: string): ReturnType<LedgerStore['resetKeyUsage']> {
    return await this.real.resetKeyUsage(keyId)
  }

  async openHolds (accountId: string): ReturnType<LedgerStore['openHolds']> {
    const open = [...this.holds].filter(([, h]) => h.accountId === accountId)
    return open.map(([id, h]) => ({ id, amount: h.amount, expiresAt: h.expiresAt, requestId: h.requestId }))
  }
}

/** The real request log store, but insertMany drops the rows it is given. */
export function droppingRequestLog (real: RequestLogStore): RequestLogStore {
  return {
    insertMany: async () => {},
    list: (q) => real.list(q),
    get: (id) => real.get(id)
  }
}
