// Model-based test: random sequences of top-ups, holds, settles, releases and expiries run
// against each backend and against a tiny in-memory model of the ledger; after every step
// the store must agree with the model and with itself.
import fc from 'fast-check'
import t from 'tap'
import type { Store } from '../plugins/store/index.js'
import { ledgerFacts } from '../plugins/store/ledger/ledger-testing.js'
import { ManualClock, testBackends } from '../plugins/store/testing.js'

type Op =
  | { op: 'credit'; amount: bigint; grant: boolean }
  | { op: 'retryCredit'; which: number; tamper: boolean }
  | { op: 'hold'; amount: bigint; floor: bigint; ttlMs: number }
  | { op: 'settle'; which: number; amount: bigint }
  | { op: 'release'; which: number }
  | { op: 'expire'; ms: number }

const opArb: fc.Arbitrary<Op> = fc.oneof(
  { arbitrary: fc.record({ op: fc.constant('credit' as const), amount: fc.bigInt(1n, 1_000_000n), grant: fc.boolean() }), weight: 2 },
  { arbitrary: fc.record({ op: fc.constant('retryCredit' as const), which: fc.nat(), tamper: fc.boolean() }), weight: 1 },
  {
    arbitrary: fc.record({
      op: fc.constant('hold' as const),
      amount: fc.oneof(fc.constant(0n), fc.bigInt(1n, 600_000n)),
      floor: fc.oneof(fc.constant(0n), fc.bigInt(-200_000n, 300_000n)),
      ttlMs: fc.integer({ min: 1, max: 10_000 }),
    }),
    weight: 4,
  },
  { arbitrary: fc.record({ op: fc.constant('settle' as const), which: fc.nat(), amount: fc.bigInt(0n, 700_000n) }), weight: 3 },
  { arbitrary: fc.record({ op: fc.constant('release' as const), which: fc.nat() }), weight: 1 },
  { arbitrary: fc.record({ op: fc.constant('expire' as const), ms: fc.integer({ min: 0, max: 6_000 }) }), weight: 1 },
)

interface ModelHold {
  id: string
  amount: bigint
  expiresAt: number
  open: boolean
}

/** The whole ledger of one account, as plain arithmetic. */
class Model {
  balance = 0n
  holds: ModelHold[] = []
  credits: Array<{ postingId: string; amount: bigint; grant: boolean }> = []
  get held(): bigint {
    return this.holds.filter((h) => h.open).reduce((sum, h) => sum + h.amount, 0n)
  }
}

const min = (a: bigint, b: bigint): bigint => (a < b ? a : b)

async function runSequence(store: Store, clock: ManualClock, ops: Op[]): Promise<void> {
  const { id: accountId } = await store.accounts.create({ name: 'model' })
  const { ledger } = store
  const model = new Model()
  const fail = (msg: string, step: number, op: Op, extra?: unknown): never => {
    throw new Error(`step ${step} ${JSON.stringify(op, (_, v) => (typeof v === 'bigint' ? `${v}n` : v))}: ${msg} ${String(extra ?? '')}`)
  }

  for (const [step, op] of ops.entries()) {
    const before = await ledgerFacts(store, accountId)
    let changed = true
    switch (op.op) {
      case 'credit': {
        const postingId = `${accountId}-c${model.credits.length}`
        const kind = op.grant ? 'grant' : 'topup'
        const r = await ledger.credit({ accountId, amount: op.amount, kind, postingId })
        model.balance += op.amount
        model.credits.push({ postingId, amount: op.amount, grant: op.grant })
        if (r.duplicate || r.balance !== model.balance) fail('credit', step, op, r.balance)
        break
      }
      case 'retryCredit': {
        const c = model.credits[op.which % Math.max(1, model.credits.length)]
        changed = false
        if (!c) break
        const kind = c.grant ? 'grant' : 'topup'
        const amount = op.tamper ? c.amount + 1n : c.amount
        const r = await ledger.credit({ accountId, amount, kind, postingId: c.postingId }).catch((e: unknown) => e)
        if (op.tamper ? !(r instanceof RangeError) : !(typeof r === 'object' && r !== null && 'duplicate' in r && r.duplicate)) {
          fail('a retried credit must answer duplicate, a tampered one must throw', step, op, r)
        }
        break
      }
      case 'hold': {
        const fits = model.balance - model.held - op.amount >= op.floor
        const r = await ledger.hold({ accountId, amount: op.amount, floor: op.floor, requestId: `s${step}`, ttlMs: op.ttlMs })
        if (r.ok !== fits) fail(`hold admitted=${r.ok}, model says ${fits}`, step, op)
        if (r.ok) {
          const expiresAt = clock.now().getTime() + op.ttlMs
          if (r.expiresAt.getTime() !== expiresAt) fail('expiry', step, op)
          model.holds.push({ id: r.holdId, amount: op.amount, expiresAt, open: true })
          const w = await ledger.wallet(accountId)
          if (w.available < op.floor) fail('below the floor after a hold', step, op, w.available)
        } else changed = false
        break
      }
      case 'settle':
      case 'release': {
        const h = model.holds[op.which % Math.max(1, model.holds.length)]
        if (!h) {
          changed = false
          break
        }
        const amount = op.op === 'settle' ? op.amount : null
        const expired = h.expiresAt <= clock.now().getTime()
        const posted = amount === null || expired ? 0n : min(amount, h.amount)
        const expected = h.open
          ? { posted, released: h.amount - posted, capped: amount !== null && !expired && amount > h.amount, duplicate: false }
          : { posted: 0n, released: 0n, capped: false, duplicate: true }
        const r =
          amount === null
            ? { ...(await ledger.release(h.id)), posted: 0n, capped: false }
            : await ledger.settle({ holdId: h.id, amount, requestId: `s${step}` })
        if (r.posted !== expected.posted || r.released !== expected.released || r.duplicate !== expected.duplicate || r.capped !== expected.capped) {
          fail('settle/release answer', step, op, JSON.stringify({ got: r, expected }, (_, v) => (typeof v === 'bigint' ? String(v) : v)))
        }
        changed = h.open
        model.balance -= expected.posted
        h.open = false
        break
      }
      case 'expire': {
        clock.advance(op.ms)
        const now = clock.now().getTime()
        const due = model.holds.filter((h) => h.open && h.expiresAt <= now)
        for (const h of due) h.open = false
        const reaped = await ledger.reapExpired()
        if (reaped !== due.length) fail(`reaped ${reaped}, model expired ${due.length}`, step, op)
        changed = due.length > 0
        break
      }
    }

    const after = await ledgerFacts(store, accountId)
    if (after.balance !== model.balance) fail('balance differs from the model', step, op, `${after.balance} vs ${model.balance}`)
    if (after.held !== model.held) fail('held differs from the model', step, op, `${after.held} vs ${model.held}`)
    if (after.balance !== after.entriesSum) fail('balance is not the sum of the entries', step, op)
    if (after.held !== after.openHoldsSum) fail('held is not the sum of the open holds', step, op)
    if (after.openHolds !== model.holds.filter((h) => h.open).length) fail('open hold count', step, op)
    if (!changed && JSON.stringify(after, (_, v) => String(v)) !== JSON.stringify(before, (_, v) => String(v))) {
      fail('a refused or duplicate operation changed something', step, op)
    }
  }
  // Leave nothing open for the next run's reaper counts.
  for (const h of model.holds.filter((x) => x.open)) await ledger.release(h.id)
}

for (const backend of testBackends()) {
  t.test(`ledger agrees with its model (${backend.name})`, async (t) => {
    t.teardown(() => backend.cleanup())
    const clock = new ManualClock()
    const store = await backend.open({ clock })
    const numRuns = backend.name === 'sqlite' ? 100 : 30
    await fc.assert(
      fc.asyncProperty(fc.array(opArb, { minLength: 1, maxLength: 30, size: 'max' }), (ops) => runSequence(store, clock, ops)),
      { numRuns },
    )
    t.pass(`${numRuns} random sequences of up to 30 operations`)
  })
}
