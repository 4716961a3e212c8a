// The bound of an account: wallet.floor − the overdraft of its tier (plugins/concerns/wallet/bound.ts).
import t from 'tap'
import { compileBounds, overdraftOf } from '../plugins/concerns/wallet/bound.js'

const limits = {
  default_tier: 'free',
  tiers: {
    free: { rank: 0, requests_per_minute: 1, concurrent_streams: 1, overdraft: '0' },
    standard: { rank: 1, requests_per_minute: 1, concurrent_streams: 1, overdraft: '0.25' },
    enterprise: { rank: 2, requests_per_minute: 1, concurrent_streams: 1, overdraft: '50' }
  }
}

t.test('floor − overdraft per tier, in nano-units', async (t) => {
  const boundOf = compileBounds({ floor: '1.00' }, limits)
  t.equal(boundOf('free'), 1_000_000_000n, 'overdraft 0: the floor')
  t.equal(boundOf('standard'), 750_000_000n)
  t.equal(boundOf('enterprise'), -49_000_000_000n, 'an overdraft beyond the floor is a credit line')
  t.equal(overdraftOf(limits, 'standard'), 250_000_000n)
})

t.test('a tier no longer defined gets default_tier\'s; so does a name of Object.prototype', async (t) => {
  const boundOf = compileBounds({ floor: '0' }, { ...limits, default_tier: 'standard' })
  t.equal(boundOf('gold'), -250_000_000n)
  t.equal(boundOf('constructor'), -250_000_000n)
  t.equal(overdraftOf({ ...limits, default_tier: 'standard' }, 'toString'), 250_000_000n)
})
