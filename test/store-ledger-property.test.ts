// Model-based test: random sequences of top-ups, holds, settles, releases and expiries run
// against each backend and against a tiny in-memory model of the ledger; after every step
// the store must agree with the model and with itself.
import fc from 'fast-check'
import t from 'tap'
import type { Store } from '../plugins/foundation/store/index.js'
import { ledgerFacts, showValues, storedBound } from './helpers/ledger.js'
import { ManualClock, testBackends } from './helpers/store.js'

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
  { arbitrary: fc.record({ op: fc.constant('expire' as const), ms: fc.integer({ min: 0, max: 6_000 }) }), weight: 1 }
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
  /** The floor of the latest admitted hold: the account's settles go no lower. */
  bound: bigint | null = null
  /** A settle left a cost unrecovered since the last top-up: holds wait for one. */
  blocked = false
  get held (): bigint {
    return this.holds.filter((h) => h.open).reduce((sum, h) => sum + h.amount, 0n)
  }
}

const min = (a: bigint, b: bigint): bigint => (a < b ? a : b)

async function runSequence (store: Store, clock: ManualClock, ops: Op[]): Promise<void> {
  const { id: accountId } = await store.accounts.create({ name: 'model' })
  const { ledger } = store
  const model = new Model()
  const fail = (msg: string, step: number, op: Op, extra?: unknown): never => {
    throw new Error(`step ${step} ${showValues(op)}: ${msg} ${String(extra ?? '')}`)
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
        if (!op.grant) model.blocked = false
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
        const fits = !model.blocked && model.balance - model.held - op.amount >= op.floor
        const r = await ledger.hold({ accountId, amount: op.amount, floor: op.floor, requestId: `s${step}`, ttlMs: op.ttlMs })
        if (r.ok !== fits) fail(`hold admitted=${r.ok}, model says ${fits}`, step, op)
        if (!r.ok && r.error !== (model.blocked ? 'topup_required' : 'insufficient_funds')) fail(`refused as ${r.error}`, step, op)
        if (r.ok) {
          model.bound = op.floor
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
        // A charge is posted up to the hold plus the slack above the bound; the rest is unrecovered.
        const asked = amount === null || expired ? 0n : amount
        const available = model.balance - model.held
        const slack = model.bound === null || available < model.bound ? 0n : available - model.bound
        const posted = min(asked, h.amount + slack)
        const used = min(posted, h.amount)
        const expected = h.open
          ? { posted, released: h.amount - used, overage: posted - used, unrecovered: asked - posted, duplicate: false }
          : { posted: 0n, released: 0n, overage: 0n, unrecovered: 0n, duplicate: true }
        const r =
          amount === null
            ? { ...(await ledger.release(h.id)), posted: 0n, overage: 0n, unrecovered: 0n }
            : await ledger.settle({ holdId: h.id, amount, requestId: `s${step}` })
        if (r.posted !== expected.posted || r.released !== expected.released || r.duplicate !== expected.duplicate ||
          r.overage !== expected.overage || r.unrecovered !== expected.unrecovered) {
          fail('settle/release answer', step, op, JSON.stringify({ got: r, expected }, (_, v) => (typeof v === 'bigint' ? String(v) : v)))
        }
        changed = h.open
        model.balance -= expected.posted
        if (expected.unrecovered > 0n) model.blocked = true
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
    if (model.bound !== null && after.available < model.bound) fail('available below the bound', step, op, `${after.available} < ${model.bound}`)
    if (((await ledger.wallet(accountId)).unrecoveredAt !== null) !== model.blocked) fail('unrecoveredAt differs from the model', step, op)
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
      { numRuns }
    )
    t.pass(`${numRuns} random sequences of up to 30 operations`)
  })
}

// Concurrent calls. Calls made in the same tick share a batch (group commit). Whatever the
// backend, the answers must add up: the balance is the credits less what the settles answered
// as posted, every settle answered posted + unrecovered = its amount, the held sum is that of
// the admitted holds still open, and the available balance is never below the account's bound.
// SQLite runs a batch in the order of its calls, so there the answers must also be exactly
// those of the same calls one by one (its batch reads each wallet once and writes it once:
// this is what checks it).
type GroupOp =
  | { op: 'hold'; amount: bigint; floor: bigint }
  | { op: 'settle'; which: number; amount: bigint }
  | { op: 'release'; which: number }

const groupOpArb: fc.Arbitrary<GroupOp> = fc.oneof(
  { arbitrary: fc.record({ op: fc.constant('hold' as const), amount: fc.bigInt(0n, 400_000n), floor: fc.oneof(fc.constant(0n), fc.bigInt(-100_000n, 200_000n)) }), weight: 4 },
  { arbitrary: fc.record({ op: fc.constant('settle' as const), which: fc.nat(), amount: fc.bigInt(0n, 500_000n) }), weight: 3 },
  { arbitrary: fc.record({ op: fc.constant('release' as const), which: fc.nat() }), weight: 1 }
)
const stepArb = fc.record({ credit: fc.oneof(fc.constant(0n), fc.bigInt(1n, 800_000n)), calls: fc.array(groupOpArb, { minLength: 1, maxLength: 10 }) })

async function runConcurrent (store: Store, steps: Array<{ credit: bigint; calls: GroupOp[] }>, serialOrder: boolean): Promise<void> {
  const { id: accountId } = await store.accounts.create({ name: 'concurrent' })
  const { ledger } = store
  const holds: Array<{ id: string; amount: bigint; open: boolean }> = []
  let credits = 0n
  let posted = 0n
  // The serial order's bound and refusal (SQLite).
  let bound: bigint | null = null
  let blocked = false
  for (const [step, { credit, calls }] of steps.entries()) {
    const fail = (msg: string): never => { throw new Error(`step ${step} ${showValues(calls)}: ${msg}`) }
    if (credit > 0n) {
      await ledger.credit({ accountId, amount: credit, kind: 'topup', postingId: `${accountId}-c${step}` })
      credits += credit
      blocked = false
    }
    // The serial answers (SQLite's contract for one batch), from the state before the batch.
    const before = await ledger.wallet(accountId)
    let available = before.available
    const open = new Map(holds.filter((h) => h.open).map((h) => [h.id, h.amount]))
    const targets = calls.map((c) => (c.op === 'hold' ? undefined : holds[c.which % Math.max(1, holds.length)]))
    const expected = calls.map((c, i) => {
      if (c.op === 'hold') {
        const fits = !blocked && available - c.amount >= c.floor
        if (fits) {
          available -= c.amount
          bound = c.floor
        }
        return { ok: fits }
      }
      const h = targets[i]
      if (!h) return null
      const amount = open.get(h.id)
      if (amount === undefined) return { posted: 0n, duplicate: true }
      open.delete(h.id)
      // A settle posts up to its hold plus the slack above the bound.
      const asked = c.op === 'settle' ? c.amount : 0n
      const slack = bound === null || available < bound ? 0n : available - bound
      const p = asked < amount + slack ? asked : amount + slack
      if (p < asked) blocked = true
      available += amount - p
      return { posted: p, duplicate: false }
    })
    const answers = await Promise.all(calls.map(async (c, i) => {
      if (c.op === 'hold') return await ledger.hold({ accountId, amount: c.amount, floor: c.floor, requestId: `g${step}.${i}`, ttlMs: 3_600_000 })
      const h = targets[i]
      if (!h) return null
      return c.op === 'settle' ? await ledger.settle({ holdId: h.id, amount: c.amount, requestId: `g${step}.${i}` }) : { ...(await ledger.release(h.id)), posted: 0n, overage: 0n, unrecovered: 0n }
    }))
    for (const [i, a] of answers.entries()) {
      const c = calls[i]!
      if (a === null) continue
      if ('ok' in a) {
        if (a.ok) holds.push({ id: a.holdId, amount: c.op === 'hold' ? c.amount : 0n, open: true })
        if (serialOrder && a.ok !== (expected[i] as { ok: boolean }).ok) fail(`call ${i}: hold admitted=${a.ok}, serial order says ${!a.ok}`)
        continue
      }
      const h = targets[i]!
      if (serialOrder && (a.posted !== (expected[i] as { posted: bigint }).posted || a.duplicate !== (expected[i] as { duplicate: boolean }).duplicate)) {
        fail(`call ${i}: ${showValues(a)}, serial order says ${showValues(expected[i])}`)
      }
      if (!a.duplicate) {
        if (!h.open) fail(`call ${i}: hold ${h.id} closed twice`)
        h.open = false
        posted += a.posted
        if (a.posted + a.unrecovered !== (c.op === 'settle' ? c.amount : 0n)) fail(`call ${i}: posted + unrecovered is not the amount asked`)
        if (a.overage !== (a.posted > h.amount ? a.posted - h.amount : 0n)) fail(`call ${i}: overage ${a.overage}`)
      }
    }
    const facts = await ledgerFacts(store, accountId)
    if (facts.balance !== credits - posted) fail(`balance ${facts.balance}, answers say ${credits - posted}`)
    if (facts.balance !== facts.entriesSum) fail('balance is not the sum of the entries')
    const held = holds.filter((h) => h.open).reduce((sum, h) => sum + h.amount, 0n)
    if (facts.held !== held || facts.openHoldsSum !== held) fail(`held ${facts.held} (open holds ${facts.openHoldsSum}), answers say ${held}`)
    const stored = await storedBound(store, accountId)
    if (stored !== null && facts.available < stored) fail(`available ${facts.available} below the bound ${stored}`)
    if (serialOrder && stored !== bound) fail(`bound ${stored}, serial order says ${bound}`)
    if (serialOrder && ((await ledger.wallet(accountId)).unrecoveredAt !== null) !== blocked) fail('unrecoveredAt differs from the serial order')
  }
  for (const h of holds.filter((x) => x.open)) await ledger.release(h.id)
}

for (const backend of testBackends()) {
  t.test(`concurrent calls add up, and on SQLite match their serial order (${backend.name})`, async (t) => {
    t.teardown(() => backend.cleanup())
    const store = await backend.open({ clock: new ManualClock() })
    const numRuns = backend.name === 'sqlite' ? 150 : 30
    await fc.assert(
      fc.asyncProperty(fc.array(stepArb, { minLength: 1, maxLength: 12 }), (steps) => runConcurrent(store, steps, backend.name === 'sqlite')),
      { numRuns }
    )
    t.pass(`${numRuns} random sequences of up to 12 batches of up to 10 concurrent calls`)
  })
}
