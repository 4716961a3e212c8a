import t from 'tap'
import fc from 'fast-check'
import { MoneyFormatError, NANOS_PER_UNIT, formatMoney, isMoneyFormatError, parseMoney } from '../plugins/foundation/pricing/money.js'

t.test('parseMoney turns decimal strings into nano-units', async (t) => {
  t.equal(parseMoney('0'), 0n)
  t.equal(parseMoney('25'), 25_000_000_000n)
  t.equal(parseMoney('25.00'), 25_000_000_000n)
  t.equal(parseMoney('0.04'), 40_000_000n)
  t.equal(parseMoney('2.50'), 2_500_000_000n)
  t.equal(parseMoney('0.000015'), 15_000n)
  t.equal(parseMoney('0.000000001'), 1n)
  t.equal(parseMoney('007.5'), 7_500_000_000n)
  t.equal(parseMoney('123456789012345678901234567890.123456789'), 123456789012345678901234567890_123456789n)
})

t.test('parseMoney rejects anything but a plain decimal, with a typed error', async (t) => {
  for (const bad of ['1e3', '-1', '.5', '1.', '1.0000000000', '0.1234567891', '', ' 1', '1 ', '+1', '1,5', '0x10', 'NaN', 'Infinity', '١٢', '1_000', '1.5.0']) {
    t.throws(() => parseMoney(bad), MoneyFormatError, bad)
  }
  try {
    parseMoney('0.1234567891')
    t.fail('should throw')
  } catch (err) {
    t.ok(isMoneyFormatError(err))
    if (isMoneyFormatError(err)) {
      t.equal(err.input, '0.1234567891')
      t.match(err.message, /more than 9 decimal places/)
    }
  }
  t.throws(() => parseMoney(1 as unknown as string), MoneyFormatError)
})

t.test('formatMoney keeps 2 to 9 decimals and a sign', async (t) => {
  t.equal(formatMoney(25_000_000_000n), '25.00')
  t.equal(formatMoney(0n), '0.00')
  t.equal(formatMoney(1n), '0.000000001')
  t.equal(formatMoney(40_000_000n), '0.04')
  t.equal(formatMoney(1_500_000n), '0.0015')
  t.equal(formatMoney(2_500_000_000n), '2.50')
  t.equal(formatMoney(123_456_789_123n), '123.456789123')
  t.equal(formatMoney(-2_000_000_000n), '-2.00')
  t.equal(formatMoney(-1n), '-0.000000001')
  t.equal(formatMoney(10n ** 30n * NANOS_PER_UNIT), `1${'0'.repeat(30)}.00`)
})

t.test('round trips', async (t) => {
  for (const s of ['25.00', '0.04', '0.0015', '0.000000001', '1234.56789']) t.equal(formatMoney(parseMoney(s)), s)
})

t.test('property: parseMoney(formatMoney(x)) === x for every x ≥ 0', async () => {
  fc.assert(fc.property(fc.bigInt({ min: 0n, max: 2n ** 128n }), (x) => parseMoney(formatMoney(x)) === x), { numRuns: 2000 })
  fc.assert(fc.property(fc.bigInt({ min: 0n, max: 10n ** 12n }), (x) => parseMoney(formatMoney(x)) === x), { numRuns: 2000 })
})

t.test('property: formatMoney(-x) is "-" + formatMoney(x)', async () => {
  fc.assert(fc.property(fc.bigInt({ min: 1n, max: 2n ** 96n }), (x) => formatMoney(-x) === `-${formatMoney(x)}`))
})
