// Feature prices (pricing.features): compiled exactly, costed inside the one rounded total, and
// held at their caps — with a property that what any answer within the request's bounds reports
// never costs more than the hold.
import t from 'tap'
import fc from 'fast-check'
import type { PriceConfig } from '../plugins/foundation/config/types.js'
import { compilePrice, PriceConfigError } from '../plugins/foundation/pricing/compile.js'
import { costOf } from '../plugins/foundation/pricing/cost.js'
import { featuresAtWorst, worstCaseUsage, type WorstCaseInput } from '../plugins/foundation/pricing/worst-case.js'
import { boundsOf } from './helpers/operations.js'
import type { FeatureUsage, Usage } from '../plugins/foundation/shapes/index.js'

const TOKEN: PriceConfig = {
  unit: 'token',
  input: '2.50',
  output: '10.00',
  per: 1000000,
  features: { search: { per_use: '0.01' }, sandbox: { per_call: '0.03' }, priority: { multiplier: '1.7' }, fetch: 'allowed', mcp: 'refused' }
}
const usage = (u: Partial<Usage>): Usage => ({ inputTokens: 0, outputTokens: 0, cachedInputTokens: 0, images: 0, audioSeconds: 0, characters: 0, calls: 0, jobs: 0, reported: true, ...u })
const used = (charge: FeatureUsage['charge'], uses: number): FeatureUsage => ({ charge, uses, reported: true })

t.test('compile: each entry to nano-units or a factor', async (t) => {
  const p = compilePrice(TOKEN)
  t.same([...p.features ?? []], [
    ['search', { charge: 'per_use', amount: 10_000_000n }],
    ['sandbox', { charge: 'per_call', amount: 30_000_000n }],
    ['priority', { charge: 'multiplier', factor: 1_700_000_000n }],
    ['fetch', { charge: 'allowed' }],
    ['mcp', { charge: 'refused' }]
  ])
  const bad = (features: unknown): PriceConfigError => {
    try {
      compilePrice({ ...TOKEN, features } as PriceConfig)
    } catch (err) {
      if (err instanceof PriceConfigError) return err
      throw err
    }
    throw new Error('compiled')
  }
  t.match(bad({ x: { per_use: '0.01', per_call: '0.02' } }), { field: 'features.x', reason: /exactly one of per_call, per_use, multiplier/ })
  t.match(bad({ x: { per_use: '0.0000000001' } }), { field: 'features.x.per_use', reason: /more than 9 decimal places/ })
  t.match(bad({ x: { multiplier: '0' } }), { field: 'features.x.multiplier', reason: /above 0/ })
  t.match(bad({ x: 'maybe' }), { field: 'features.x' })
})

t.test('cost: per use, per call, a factor on the tokens, all in one rounding', async (t) => {
  const p = compilePrice(TOKEN)
  const tokens = { inputTokens: 1000, outputTokens: 100 } // 0.0025 + 0.001
  t.equal(costOf(p, usage(tokens)), 3_500_000n, 'no features: tokens alone')
  t.equal(costOf(p, usage({ ...tokens, features: { search: used('per_use', 3) } })), 3_500_000n + 30_000_000n, 'three searches')
  t.equal(costOf(p, usage({ ...tokens, features: { sandbox: used('per_call', 1) } })), 3_500_000n + 30_000_000n, 'one container')
  t.equal(costOf(p, usage({ ...tokens, features: { priority: used('multiplier', 1) } })), 5_950_000n, '1.7 × the tokens')
  t.equal(costOf(p, usage({ ...tokens, features: { priority: used('multiplier', 0) } })), 3_500_000n, 'a tier that did not apply multiplies nothing')
  t.equal(costOf(p, usage({ ...tokens, features: { fetch: used('tokens', 1) } })), 3_500_000n, 'a feature billed as tokens adds nothing of its own')
  // 1 input token at 2.50 / 1M × 1.666666667 = 0.0000041666666675 → rounded up once, not per term.
  const mini = compilePrice({ ...TOKEN, features: { priority: { multiplier: '1.666666667' } } })
  t.equal(costOf(mini, usage({ inputTokens: 1, features: { priority: used('multiplier', 1) } })), 4_167n)
  t.throws(() => costOf(p, usage({ features: { mcp: used('per_call', 1) } })), RangeError, 'a refused feature used is a bug, never free')
  t.throws(() => costOf(p, usage({ features: { other: used('per_use', 1) } })), RangeError, 'so is an unpriced one')
  t.throws(() => costOf(p, usage({ features: { search: used('per_use', -1) } })), RangeError)
})

t.test('a cheaper tier is held at the full price: the provider may not grant it', async (t) => {
  const flex = compilePrice({ ...TOKEN, features: { flex: { multiplier: '0.5' }, priority: { multiplier: '1.7' } } })
  t.same(featuresAtWorst(flex, { flex: used('multiplier', 1) }), { flex: used('multiplier', 0) })
  t.same(featuresAtWorst(flex, { priority: used('multiplier', 1) }), { priority: used('multiplier', 1) })
})

t.test('worst case: input at the context window per pass, features at their caps', async (t) => {
  const base: WorstCaseInput = { bounds: boundsOf('responses'), model: { pricing: TOKEN, maxOutputTokens: 1000, contextTokens: 128_000 }, json: { input: 'hi' }, bodyBytes: 200 }
  t.equal(worstCaseUsage(base).inputTokens, 200, 'the body bounds ordinary input')
  t.equal(worstCaseUsage({ ...base, inputPasses: 1 }).inputTokens, 128_000, 'uncountable input: the context window')
  t.equal(worstCaseUsage({ ...base, inputPasses: 11 }).inputTokens, 1_408_000, 'ten tool uses: eleven passes')
  t.throws(() => worstCaseUsage({ ...base, model: { pricing: TOKEN }, inputPasses: 1 }), RangeError, 'without a context window there is no bound')
  const held = worstCaseUsage({ ...base, inputPasses: 11, features: { search: used('per_use', 10), priority: used('multiplier', 1) } })
  t.equal(costOf(compilePrice(TOKEN), held), (1_408_000n * 2_500n + 1000n * 10_000n) * 17n / 10n + 10n * 10_000_000n, 'tokens × 1.7 and ten searches')
})

// Property: for any feature prices and any answer within the request's bounds (input up to the
// passes × context window, output up to the cap, uses up to the cap, the tier applied or not —
// a cheaper tier, factor below 1, may be refused by the provider), the charge never exceeds
// the hold.
t.test('property: a charge within the declared bounds never exceeds the hold', async () => {
  const money = fc.bigInt({ min: 0n, max: 10n ** 10n }).map((v) => `${v / 1_000_000_000n}.${(v % 1_000_000_000n).toString().padStart(9, '0')}`)
  fc.assert(fc.property(
    money, money, money, money, fc.integer({ min: 1, max: 3_000_000_000 }).map((n) => `${Math.floor(n / 1e9)}.${String(n % 1e9).padStart(9, '0')}`),
    fc.integer({ min: 1, max: 2_000_000 }), fc.integer({ min: 1, max: 100_000 }), fc.integer({ min: 0, max: 20 }), fc.integer({ min: 1, max: 50_000 }),
    fc.record({ input: fc.double({ min: 0, max: 1, noNaN: true }), output: fc.double({ min: 0, max: 1, noNaN: true }), uses: fc.double({ min: 0, max: 1, noNaN: true }), tier: fc.boolean(), call: fc.boolean() }),
    (input, output, perUse, perCall, factor, context, maxOut, cap, bodyBytes, share) => {
      const pricing: PriceConfig = { unit: 'token', input, output, per: 1_000_000, features: { search: { per_use: perUse }, box: { per_call: perCall }, tier: { multiplier: factor } } }
      const price = compilePrice(pricing)
      const passes = 1 + cap
      const hold = costOf(price, worstCaseUsage({
        bounds: boundsOf('responses'),
        model: { pricing, maxOutputTokens: maxOut, contextTokens: context },
        json: { input: 'x' },
        bodyBytes,
        inputPasses: passes,
        features: featuresAtWorst(price, { search: used('per_use', cap), box: used('per_call', 1), tier: used('multiplier', 1) })
      }))
      const charge = costOf(price, usage({
        inputTokens: Math.floor(share.input * passes * context),
        outputTokens: Math.floor(share.output * maxOut),
        features: { search: used('per_use', Math.floor(share.uses * cap)), box: used('per_call', share.call ? 1 : 0), tier: used('multiplier', share.tier ? 1 : 0) }
      }))
      return charge <= hold
    }), { numRuns: 500 })
})
