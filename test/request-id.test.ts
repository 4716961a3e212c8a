// Request ids: `req_` + 12 hex digits of the time in ms + 20 random hex digits, unique, sorting
// by time; the random digits drawn from a pool refilled every 409 ids.
import t from 'tap'
import { newRequestId } from '../plugins/foundation/pipeline/request-id.js'

t.test('format, time prefix, uniqueness and random digits across pool refills', async (t) => {
  const before = Date.now()
  const ids = Array.from({ length: 10_000 }, () => newRequestId())
  const after = Date.now()
  t.ok(ids.every((id) => /^req_[0-9a-f]{32}$/.test(id)), 'req_ + 32 lowercase hex digits')
  t.equal(new Set(ids).size, ids.length, '10,000 ids (24 pool refills), no repeat')
  const times = ids.map((id) => parseInt(id.slice(4, 16), 16))
  t.ok(times.every((ms) => ms >= before && ms <= after), 'the first 12 digits are the time of creation, in ms')
  t.ok(times.every((ms, i) => i === 0 || ms >= (times[i - 1] as number)), 'ids made later sort later')
  // Every random position takes (nearly) every digit: a pool left unfilled or reused would not.
  for (let at = 16; at < 36; at++) {
    const digits = new Set(ids.map((id) => id[at]))
    if (digits.size < 16) t.fail(`random digit ${at - 15} took only ${digits.size} values in 10,000 ids`)
  }
  t.pass('each of the 20 random digits took all 16 values')
})
