// The pure parts of the console's throttles: the subject a client address is counted as (IPv6
// per /64), the mailbox an email is counted as (plus tags folded), and the password hasher's
// bound (at most `concurrency` running, `queue` waiting, the rest refused before any work).
import t from 'tap'
import { mailbox } from '../plugins/apps/console/index.js'
import { PasswordHasher } from '../plugins/apps/console/password-hasher.js'
import { throttleAddress } from '../plugins/apps/console/throttle.js'
import { isGatewayError } from '../plugins/foundation/errors/index.js'

t.test('client addresses: IPv4 as is, IPv4-mapped as IPv4, IPv6 by its /64', async (t) => {
  t.equal(throttleAddress('203.0.113.7'), '203.0.113.7')
  t.equal(throttleAddress('::ffff:203.0.113.7'), '203.0.113.7')
  t.equal(throttleAddress('2001:db8:1:2:3:4:5:6'), '2001:db8:1:2::/64')
  t.equal(throttleAddress('2001:db8:1:2::9'), '2001:db8:1:2::/64', 'another host of the same /64')
  t.equal(throttleAddress('2001:0db8:0001:0002:ffff::1'), '2001:db8:1:2::/64', 'leading zeros do not make another subject')
  t.equal(throttleAddress('2001:db8::1'), '2001:db8:0:0::/64', ':: expanded')
  t.equal(throttleAddress('::1'), '0:0:0:0::/64')
  t.not(throttleAddress('2001:db8:1:3::1'), throttleAddress('2001:db8:1:2::1'), 'another /64 is another subject')
})

t.test('mailboxes: a +tag folds into its base address', async (t) => {
  t.equal(mailbox('ann+x@example.org'), 'ann@example.org')
  t.equal(mailbox('ann+x+y@example.org'), 'ann@example.org')
  t.equal(mailbox('ann@example.org'), 'ann@example.org')
  t.equal(mailbox('+ann@example.org'), '+ann@example.org', 'a local part that starts with + is kept')
})

t.test('the password hasher runs `concurrency` at once, queues `queue`, refuses the rest before any work', async (t) => {
  const hasher = new PasswordHasher(1, 2)
  const pending = Array.from({ length: 6 }, () => hasher.hash('a password of some length'))
  t.equal(hasher.load, 3, 'three admitted at once')
  const results = await Promise.allSettled(pending)
  const refused = results.filter((r) => r.status === 'rejected')
  t.equal(results.filter((r) => r.status === 'fulfilled').length, 3, '1 running + 2 queued hashed')
  t.equal(refused.length, 3, 'the rest refused')
  for (const r of refused) {
    const err = (r as PromiseRejectedResult).reason as unknown
    t.ok(isGatewayError(err) && err.code === 'LIMIT_RATE_EXCEEDED' && err.details.retryAfterSeconds === 1, 'LIMIT_RATE_EXCEEDED, Retry-After 1')
  }
  t.equal(hasher.load, 0, 'nothing left running')
  const hashed = results.flatMap((r) => r.status === 'fulfilled' ? [r.value] : [])
  t.ok(await hasher.verify('a password of some length', hashed[0] ?? ''), 'a hash it made verifies')
})
