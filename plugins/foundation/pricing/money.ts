// Money is an integer count of nano-units held as a bigint: 1 currency unit = 1_000_000_000
// minor units. Prices and balances cross the API boundary as decimal strings; nothing here
// ever goes through a floating-point number.

/** Minor units (nano-units) in one unit of account currency. */
export const NANOS_PER_UNIT = 1_000_000_000n

/** Decimal places of the minor unit. */
export const MONEY_SCALE = 9

const MONEY_PATTERN = /^(\d+)(?:\.(\d{1,9}))?$/

/** Thrown by parseMoney for anything that is not a plain non-negative decimal with at most 9 places. */
export class MoneyFormatError extends Error {
  readonly input: string

  constructor (input: string, reason: string) {
    super(`invalid money amount ${JSON.stringify(input)}: ${reason}`)
    this.name = 'MoneyFormatError'
    this.input = input
  }
}

export function isMoneyFormatError (err: unknown): err is MoneyFormatError {
  return err instanceof MoneyFormatError
}

/**
 * Parses a decimal string such as "25", "0.04" or "0.000000001" into nano-units.
 * Accepts exactly /^\d+(\.\d{1,9})?$/: no sign, no exponent, no leading dot, no spaces.
 * More than 9 decimal places is an error rather than a silent rounding.
 */
export function parseMoney (decimal: string): bigint {
  if (typeof decimal !== 'string') throw new MoneyFormatError(String(decimal), 'expected a decimal string')
  const m = MONEY_PATTERN.exec(decimal)
  if (!m) {
    const reason = /^\d+\.\d{10,}$/.test(decimal)
      ? `more than ${MONEY_SCALE} decimal places`
      : 'expected digits with an optional fraction of 1 to 9 digits, e.g. "0.04"'
    throw new MoneyFormatError(decimal, reason)
  }
  const whole = m[1] ?? '0'
  const fraction = (m[2] ?? '').padEnd(MONEY_SCALE, '0')
  return BigInt(whole) * NANOS_PER_UNIT + BigInt(fraction)
}

/**
 * Renders nano-units as a decimal string with at least 2 and at most 9 decimals,
 * trailing zeros beyond the second trimmed: 25_000_000_000n → "25.00",
 * 1_500_000n → "0.0015", -2_000_000_000n → "-2.00".
 */
export function formatMoney (v: bigint): string {
  const negative = v < 0n
  const abs = negative ? -v : v
  const whole = abs / NANOS_PER_UNIT
  let fraction = (abs % NANOS_PER_UNIT).toString().padStart(MONEY_SCALE, '0')
  fraction = fraction.replace(/0+$/, '')
  if (fraction.length < 2) fraction = fraction.padEnd(2, '0')
  return `${negative ? '-' : ''}${whole.toString()}.${fraction}`
}
