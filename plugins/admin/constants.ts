// Names other plugins and the server share with the admin API and CLI.

/** Where the lead registers adminRoutes. */
export const ADMIN_PREFIX = '/admin/v1'

/**
 * Decimal places between a currency unit and the minor unit kept inside (nano-units):
 * money crosses the admin API as a decimal string, e.g. "25.00" = 25_000_000_000n.
 */
export const MINOR_UNIT_DIGITS = 9

/** Admin bodies are small settings objects; anything near this size is a mistake. */
export const ADMIN_BODY_LIMIT_BYTES = 1024 * 1024

/** Page size of `GET /accounts` when `limit` is not given; the store caps pages at 1000. */
export const DEFAULT_PAGE_LIMIT = 100
export const MAX_PAGE_LIMIT = 1000
