// Cost of one request in nano-units.
//
// ROUNDING RULE: the exact rational total of the request — the sum over every billed quantity of
// quantity × numerator / per — is computed first with integer arithmetic, and rounded UP once to a
// whole nano-unit. Nothing is rounded per token, per image or per line item, so splitting a
// request's usage differently never changes its price by more than that single rounding, and a
// request is never charged less than its exact price.
//
// Billed quantities by unit:
//   token         (input − cached − writes) × input + cached × cached_input (input price when no
//                 cached price) + 5-minute cache writes × cache_write + 1-hour writes ×
//                 cache_write_1h (each falling back to the one before, then input) + output ×
//                 output. inputTokens includes cachedInputTokens and both cache writes.
//   image         images × unit_price (or, with image_prices, × the entry of usage.imageTier:
//                 the dearest entry when the tier is absent or not priced), plus the token terms above for whichever of input/output/
//                 cached_input the list also prices.
//   audio_second  audioSeconds rounded UP to the next whole millisecond (the seconds value as
//                 written in its shortest decimal form, so 2.5 → 2500 ms, 1.0001 → 1001 ms),
//                 × unit_price / 1000.
//   character     characters × unit_price.
//   call          calls × unit_price.
//   job           jobs × unit_price.
//   features      (usage.features, when the request used any) each per_call or per_use feature
//                 adds uses × its price; a multiplier feature that applied multiplies the token
//                 terms above by its factor. All inside the same exact total, rounded once.
// Costs are never negative: a negative, non-finite or (for counts) non-integer usage field, or
// cachedInputTokens > inputTokens, is a programming error and throws a RangeError.
import { NANOS_PER_UNIT } from './money.js'
import type { CompiledPrice, ImagePrices, ImageTier, Rate, Usage } from '../shapes/index.js'

const COUNT_FIELDS = ['inputTokens', 'outputTokens', 'cachedInputTokens', 'images', 'characters', 'calls', 'jobs'] as const

/** An exact non-negative fraction of nano-units. */
interface Fraction { num: bigint; den: bigint }

function checkCount (usage: Usage, field: typeof COUNT_FIELDS[number]): number {
  const v = usage[field]
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) {
    throw new RangeError(`usage.${field} must be a non-negative integer, got ${String(v)}`)
  }
  return v
}

function count (usage: Usage, field: typeof COUNT_FIELDS[number]): bigint {
  return BigInt(checkCount(usage, field))
}

function checkSeconds (seconds: number): void {
  if (typeof seconds !== 'number' || !Number.isFinite(seconds) || seconds < 0) {
    throw new RangeError(`usage.audioSeconds must be a finite number ≥ 0, got ${String(seconds)}`)
  }
}

/** Whole milliseconds in `seconds`, rounded up; exact for the number's shortest decimal form. */
export function billableMillis (seconds: number): bigint {
  checkSeconds(seconds)
  const text = String(seconds)
  if (/e-/.test(text)) return 1n // 0 < seconds < 1e-6
  const m = /^(\d+)(?:\.(\d+))?$/.exec(text)
  if (!m) throw new RangeError(`usage.audioSeconds is out of range: ${text}`)
  const fraction = m[2] ?? ''
  const millis = BigInt(m[1] ?? '0') * 1000n + BigInt(fraction.slice(0, 3).padEnd(3, '0'))
  return /[1-9]/.test(fraction.slice(3)) ? millis + 1n : millis
}

function add (acc: Fraction, quantity: bigint, rate: Rate, scale = 1n): Fraction {
  if (quantity === 0n || rate.numerator === 0n) return acc
  const den = rate.per * scale
  // The rates of one list share their `per` (compile.ts): after the first term, a plain sum.
  if (den === acc.den) return { num: acc.num + quantity * rate.numerator, den }
  return { num: acc.num * den + quantity * rate.numerator * acc.den, den: acc.den * den }
}

function ceilDiv (num: bigint, den: bigint): bigint {
  return (num + den - 1n) / den
}

function optionalCount (usage: Usage, field: 'cacheWriteTokens' | 'cacheWrite1hTokens'): bigint {
  const v = usage[field]
  if (v === undefined) return 0n
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) throw new RangeError(`usage.${field} must be a non-negative integer, got ${String(v)}`)
  return BigInt(v)
}

function addTokens (acc: Fraction, price: CompiledPrice, usage: Usage): Fraction {
  const input = count(usage, 'inputTokens')
  const cached = count(usage, 'cachedInputTokens')
  const output = count(usage, 'outputTokens')
  const write5m = optionalCount(usage, 'cacheWriteTokens')
  const write1h = optionalCount(usage, 'cacheWrite1hTokens')
  if (cached + write5m + write1h > input) {
    throw new RangeError(`usage.cachedInputTokens (${cached}) and cache writes (${write5m + write1h}) exceed usage.inputTokens (${input})`)
  }
  let total = acc
  if (price.input) {
    total = add(total, input - cached - write5m - write1h, price.input)
    total = add(total, cached, price.cachedInput ?? price.input)
    total = add(total, write5m, price.cacheWrite ?? price.input)
    total = add(total, write1h, price.cacheWrite1h ?? price.cacheWrite ?? price.input)
  }
  if (price.output) total = add(total, output, price.output)
  return total
}

/** The price of one image of `tier`; the dearest entry when the tier is absent or not in the table. */
export function imagePrice (prices: ImagePrices, tier: ImageTier | undefined): bigint {
  const exact = tier === undefined ? undefined : prices.byQuality.get(tier.quality)?.get(tier.size)
  if (exact !== undefined) return exact
  let dearest = 0n
  for (const row of prices.byQuality.values()) for (const p of row.values()) if (p > dearest) dearest = p
  return dearest
}

function unitRate (price: CompiledPrice): Rate {
  if (!price.unitPrice) throw new RangeError(`price list of unit ${price.unit} has no unit price`)
  return price.unitPrice
}

/** The features' terms: the factor on the token terms (null: none applied), and the fraction they add. */
function featureTerms (price: CompiledPrice, usage: Usage): { factor: Fraction | null, extra: Fraction } {
  let factorNum = 1n
  let factorDen = 1n
  let extra: Fraction = { num: 0n, den: 1n }
  for (const [name, used] of Object.entries(usage.features ?? {})) {
    const uses = used.uses
    if (!Number.isSafeInteger(uses) || uses < 0) throw new RangeError(`usage.features.${name}.uses must be a non-negative integer, got ${String(uses)}`)
    // A feature billed as tokens has nothing of its own: its tokens are in the usage.
    if (uses === 0 || used.charge === 'tokens') continue
    const p = price.features?.get(name)
    if (p === undefined || p.charge === 'refused') throw new RangeError(`feature ${name} was used but the price list does not price it`)
    if (p.charge === 'per_call' || p.charge === 'per_use') extra = add(extra, BigInt(uses), { numerator: p.amount, per: 1n })
    else if (p.charge === 'multiplier') {
      factorNum *= p.factor
      factorDen *= NANOS_PER_UNIT
    }
  }
  return { factor: factorDen === 1n ? null : { num: factorNum, den: factorDen }, extra }
}

/** The token terms of `usage`, times the features' factor when one applied. */
function addTokensTimes (acc: Fraction, price: CompiledPrice, usage: Usage, factor: Fraction | null): Fraction {
  if (factor === null) return addTokens(acc, price, usage)
  const tokens = addTokens({ num: 0n, den: 1n }, price, usage)
  const scaled = { num: tokens.num * factor.num, den: tokens.den * factor.den }
  return { num: acc.num * scaled.den + scaled.num * acc.den, den: acc.den * scaled.den }
}

/** Exact cost of `usage` under `price`, in nano-units, rounded up once (see the rule above). */
export function costOf (price: CompiledPrice, usage: Usage): bigint {
  for (let i = 0; i < COUNT_FIELDS.length; i++) checkCount(usage, COUNT_FIELDS[i] as typeof COUNT_FIELDS[number])
  checkSeconds(usage.audioSeconds)
  const features = usage.features === undefined ? null : featureTerms(price, usage)
  let total: Fraction = features === null ? { num: 0n, den: 1n } : features.extra
  const factor = features?.factor ?? null
  switch (price.unit) {
    case 'token':
      total = addTokensTimes(total, price, usage, factor)
      break
    case 'image':
      total = add(total, count(usage, 'images'), price.imagePrices === undefined ? unitRate(price) : { numerator: imagePrice(price.imagePrices, usage.imageTier), per: 1n })
      total = addTokensTimes(total, price, usage, factor)
      break
    case 'audio_second':
      // Read from the number's decimal form only where it is billed (a hold's worst case
      // carries seconds for every unit).
      total = add(total, usage.audioSeconds === 0 ? 0n : billableMillis(usage.audioSeconds), unitRate(price), 1000n)
      break
    case 'character':
      total = add(total, count(usage, 'characters'), unitRate(price))
      break
    case 'call':
      total = add(total, count(usage, 'calls'), unitRate(price))
      break
    case 'job':
      total = add(total, count(usage, 'jobs'), unitRate(price))
      break
    default: {
      const unit: never = price.unit
      throw new RangeError(`unknown price unit ${String(unit)}`)
    }
  }
  return ceilDiv(total.num, total.den)
}
