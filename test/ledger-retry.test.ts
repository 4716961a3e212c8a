// withLedgerRetry: a failed ledger write is tried again, up to `attempts` times, the last error
// passed on; an op that throws at once counts as a failed attempt.
import t from 'tap'
import { withLedgerRetry } from '../plugins/foundation/store/ledger/retry.js'

t.test('fails twice, then succeeds: three calls, the value', async (t) => {
  let calls = 0
  const value = await withLedgerRetry(async () => {
    calls++
    if (calls < 3) throw new Error(`down ${calls}`)
    return 'posted'
  }, 5, 1)
  t.equal(value, 'posted')
  t.equal(calls, 3)
})

t.test('always fails: `attempts` calls, then the last error', async (t) => {
  let calls = 0
  await t.rejects(withLedgerRetry(async () => { calls++; throw new Error(`down ${calls}`) }, 4, 1), { message: 'down 4' })
  t.equal(calls, 4)
})

t.test('an op that throws before its promise is retried like one that rejects', async (t) => {
  let calls = 0
  const value = await withLedgerRetry(() => {
    calls++
    if (calls === 1) throw new Error('thrown at once')
    return Promise.resolve(7)
  }, 5, 1)
  t.equal(value, 7)
  t.equal(calls, 2)
  let thrown = 0
  const last = withLedgerRetry(() => { thrown++; throw new Error('always') }, 2, 1)
  t.type(last, Promise, 'a promise even when every attempt throws at once')
  await t.rejects(last, { message: 'always' })
  t.equal(thrown, 2)
})

t.test('the waits double: 1, 2, 4 × delayMs', async (t) => {
  const at: number[] = []
  await withLedgerRetry(async () => {
    at.push(performance.now())
    if (at.length < 4) throw new Error('down')
    return true
  }, 5, 40)
  const gaps = at.slice(1).map((x, i) => x - (at[i] as number))
  t.ok(gaps[0]! >= 39 && gaps[1]! >= 79 && gaps[2]! >= 159, `gaps ${gaps.map((g) => g.toFixed(0)).join(', ')} ms are at least 40, 80, 160`)
  t.ok(gaps[1]! > gaps[0]! && gaps[2]! > gaps[1]!, 'each wait longer than the one before')
})
