// Bounds of the account and key service, which the admin API, the CLI and the console share.
import { MONEY_SCALE } from '../../foundation/pricing/index.js'

/**
 * Decimal places between a currency unit and the minor unit kept inside (nano-units):
 * money crosses the admin API as a decimal string, e.g. "25.00" = 25_000_000_000n.
 */
export const MINOR_UNIT_DIGITS = MONEY_SCALE

/** Page size of `GET /accounts` when `limit` is not given; the store caps pages at 1000. */
export const DEFAULT_PAGE_LIMIT = 100
export const MAX_PAGE_LIMIT = 1000
