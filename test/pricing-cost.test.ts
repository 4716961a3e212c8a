import t from 'tap'
import fc from 'fast-check'
import type { PriceConfig } from '../plugins/foundation/config/types.js'
import { compilePrice } from '../plugins/foundation/pricing/compile.js'
import { billableMillis, costOf } from '../plugins/foundation/pricing/cost.js'
import type { Usage } from '../plugins/foundation/shapes/index.js'

const ZERO: Usage = { inputTokens: 0, outputTokens: 0, cachedInputTokens: 0, images: 0, audioSeconds: 0, characters: 0, calls: 0, jobs: 0, reported: true }
const usage = (u: Partial<Usage>): Usage => ({ ...ZERO, ...u })
const cost = (p: PriceConfig, u: Partial<Usage>): bigint => costOf(compilePrice(p), usage(u))

const GPT_4O: PriceConfig = { unit: 'token', input: '2.50', cached_input: '1.25', output: '10.00', per: 1000000 }

t.test('token: input, cached input and output', async (t) => {
  // 2500, 1250 and 10000 nano-units per token
  t.equal(cost(GPT_4O, { inputTokens: 1000, outputTokens: 500 }), 2_500_000n + 5_000_000n)
  // (1000 − 400) × 2500 + 400 × 1250 + 500 × 10000
  t.equal(cost(GPT_4O, { inputTokens: 1000, cachedInputTokens: 400, outputTokens: 500 }), 1_500_000n + 500_000n + 5_000_000n)
  t.equal(cost(GPT_4O, { inputTokens: 400, cachedInputTokens: 400 }), 500_000n)
  t.equal(cost(GPT_4O, {}), 0n)
})

t.test('token: cached tokens fall back to the input price', async (t) => {
  // 0.50 / M = 500 nano per token for every input token, cached or not
  t.equal(cost({ unit: 'token', input: '0.50', output: '1.50', per: 1000000 }, { inputTokens: 1000, cachedInputTokens: 400, outputTokens: 10 }), 500_000n + 15_000n)
})

t.test('token: fields of other units are ignored', async (t) => {
  t.equal(cost(GPT_4O, { inputTokens: 1, images: 9, audioSeconds: 9, characters: 9, calls: 9, jobs: 9 }), 2_500n)
})

t.test('rounding: the exact total is rounded up once, never per token', async (t) => {
  // 1.000000001 per million = 1000.000001 nano per token
  const p: PriceConfig = { unit: 'token', input: '1.000000001', output: '0', per: 1000000 }
  t.equal(cost(p, { inputTokens: 1 }), 1001n)
  t.equal(cost(p, { inputTokens: 3 }), 3001n, 'not 3 × 1001')
  t.equal(cost(p, { inputTokens: 1_000_000 }), 1_000_000_001n, 'exact, no rounding needed')
  // half a nano per token on each side: 1 input + 1 output is exactly 1 nano, not 1 + 1
  const half: PriceConfig = { unit: 'token', input: '0.5', output: '0.5', per: 1000000000 }
  t.equal(cost(half, { inputTokens: 1, outputTokens: 1 }), 1n)
  t.equal(cost(half, { inputTokens: 1 }), 1n)
  t.equal(cost(half, { inputTokens: 3, outputTokens: 2 }), 3n)
  // thirds across different terms: 1/3 + 1/3 + 1/3 = 1
  const third: PriceConfig = { unit: 'token', input: '1', cached_input: '1', output: '1', per: 3000000000 }
  t.equal(cost(third, { inputTokens: 2, cachedInputTokens: 1, outputTokens: 1 }), 1n)
  t.equal(cost(third, { inputTokens: 2, cachedInputTokens: 1, outputTokens: 2 }), 2n)
})

t.test('image: per image × n', async (t) => {
  const p: PriceConfig = { unit: 'image', unit_price: '0.04' }
  t.equal(cost(p, { images: 1 }), 40_000_000n)
  t.equal(cost(p, { images: 3 }), 120_000_000n)
  t.equal(cost(p, { images: 0, inputTokens: 5000 }), 0n, 'no token prices, tokens are free')
})

t.test('image: token prices on an image list are added', async (t) => {
  // per 1M: 40000 per million images = 0.04 each, 5.00 / 40.00 per million tokens
  const p: PriceConfig = { unit: 'image', unit_price: '40000', input: '5.00', output: '40.00', per: 1000000 }
  t.equal(cost(p, { images: 2, inputTokens: 100, outputTokens: 4160 }), 80_000_000n + 500_000n + 166_400_000n)
})

t.test('audio_second: billed to the started millisecond', async (t) => {
  const p: PriceConfig = { unit: 'audio_second', unit_price: '0.0001' } // 100 nano per ms
  t.equal(cost(p, { audioSeconds: 2.5 }), 250_000n)
  t.equal(cost(p, { audioSeconds: 60 }), 6_000_000n)
  t.equal(cost(p, { audioSeconds: 1.0001 }), 100_100n, '1001 ms')
  t.equal(cost(p, { audioSeconds: 1.001 }), 100_100n, 'exactly 1001 ms despite 1.001 × 1000 < 1001 in floats')
  t.equal(cost(p, { audioSeconds: 0.0004 }), 100n)
  t.equal(cost(p, { audioSeconds: 0 }), 0n)
  t.equal(cost(p, { audioSeconds: 3, inputTokens: 99, characters: 99 }), 300_000n)
  // 1 nano per second: 1.5 s = 1.5 nano → 2
  t.equal(cost({ unit: 'audio_second', unit_price: '0.000000001' }, { audioSeconds: 1.5 }), 2n)
  t.equal(cost({ unit: 'audio_second', unit_price: '0.000000001' }, { audioSeconds: 0.001 }), 1n)
})

t.test('billableMillis reads the decimal as written and rounds up', async (t) => {
  t.equal(billableMillis(0), 0n)
  t.equal(billableMillis(2.5), 2500n)
  t.equal(billableMillis(0.007), 7n)
  t.equal(billableMillis(1.001), 1001n)
  t.equal(billableMillis(1.0010001), 1002n)
  t.equal(billableMillis(0.1 + 0.2), 301n, '0.30000000000000004 s is a little over 300 ms')
  t.equal(billableMillis(1e-7), 1n)
  t.equal(billableMillis(123456.789), 123456789n)
  t.throws(() => billableMillis(1e21), RangeError)
})

t.test('character, call and job', async (t) => {
  t.equal(cost({ unit: 'character', unit_price: '0.000015' }, { characters: 1234 }), 18_510_000n)
  t.equal(cost({ unit: 'character', unit_price: '15.00', per: 1000000 }, { characters: 1 }), 15_000n)
  t.equal(cost({ unit: 'call', unit_price: '0.05' }, { calls: 1, images: 4 }), 50_000_000n)
  t.equal(cost({ unit: 'job', unit_price: '1.00' }, { jobs: 1 }), 1_000_000_000n)
  t.equal(cost({ unit: 'job', unit_price: '3.00' }, { jobs: 0 }), 0n, 'a failed job costs nothing')
})

t.test('invalid usage is a programming error', async (t) => {
  for (const bad of [{ inputTokens: -1 }, { outputTokens: 1.5 }, { images: Number.NaN }, { calls: Infinity }, { jobs: 2 ** 60 },
    { audioSeconds: -0.5 }, { audioSeconds: Number.NaN }, { inputTokens: 1, cachedInputTokens: 2 }]) {
    t.throws(() => cost(GPT_4O, bad), RangeError, JSON.stringify(bad))
  }
  t.throws(() => cost({ unit: 'image', unit_price: '1' }, { characters: -1 }), RangeError, 'checked whatever the unit')
})

const arbPrice: fc.Arbitrary<PriceConfig> = fc.oneof(
  fc.record({
    unit: fc.constant('token' as const),
    input: fc.bigInt({ min: 0n, max: 10n ** 12n }).map(String),
    output: fc.bigInt({ min: 0n, max: 10n ** 12n }).map(String),
    per: fc.integer({ min: 1, max: 10_000_000 })
  }),
  fc.record({
    unit: fc.constantFrom('image' as const, 'audio_second' as const, 'character' as const, 'call' as const, 'job' as const),
    unit_price: fc.bigInt({ min: 0n, max: 10n ** 12n }).map((v) => `${v / 1_000_000_000n}.${(v % 1_000_000_000n).toString().padStart(9, '0')}`),
    per: fc.integer({ min: 1, max: 1000 })
  })
)
const arbUsage: fc.Arbitrary<Usage> = fc.record({
  inputTokens: fc.nat(10_000_000),
  outputTokens: fc.nat(10_000_000),
  images: fc.nat(10),
  audioSeconds: fc.nat(10_000_000).map((ms) => ms / 1000),
  characters: fc.nat(1_000_000),
  calls: fc.nat(3),
  jobs: fc.nat(3),
  reported: fc.boolean()
}).map((u) => ({ ...u, cachedInputTokens: Math.floor(u.inputTokens / 3) }))
const plus = (a: Usage, b: Usage): Usage => ({
  inputTokens: a.inputTokens + b.inputTokens,
  outputTokens: a.outputTokens + b.outputTokens,
  cachedInputTokens: a.cachedInputTokens + b.cachedInputTokens,
  images: a.images + b.images,
  audioSeconds: (Math.round(a.audioSeconds * 1000) + Math.round(b.audioSeconds * 1000)) / 1000,
  characters: a.characters + b.characters,
  calls: a.calls + b.calls,
  jobs: a.jobs + b.jobs,
  reported: true
})

t.test('property: one round-up — cost(a + b) ≤ cost(a) + cost(b) ≤ cost(a + b) + 1', async () => {
  fc.assert(fc.property(arbPrice, arbUsage, arbUsage, (p, a, b) => {
    const c = compilePrice(p)
    const whole = costOf(c, plus(a, b))
    const parts = costOf(c, a) + costOf(c, b)
    return whole <= parts && parts <= whole + 1n
  }), { numRuns: 500 })
})

t.test('property: cost is the exact amount rounded up by less than one nano-unit', async () => {
  fc.assert(fc.property(arbPrice, arbUsage, (p, u) => {
    const c = compilePrice(p)
    const per = BigInt(p.per ?? 1)
    let exactTimesPer: bigint // × per × 1000 for a common denominator
    if (p.unit === 'token') {
      exactTimesPer = (BigInt(u.inputTokens) * (c.input?.numerator ?? 0n) + BigInt(u.outputTokens) * (c.output?.numerator ?? 0n)) * 1000n
    } else {
      const qty = { image: u.images * 1000, audio_second: Math.round(u.audioSeconds * 1000), character: u.characters * 1000, call: u.calls * 1000, job: u.jobs * 1000 }[p.unit]
      exactTimesPer = BigInt(qty) * (c.unitPrice?.numerator ?? 0n)
    }
    const got = costOf(c, u)
    const den = per * 1000n
    return got * den >= exactTimesPer && (got - 1n) * den < exactTimesPer && got >= 0n
  }), { numRuns: 500 })
})
