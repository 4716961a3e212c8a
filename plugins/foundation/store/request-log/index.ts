// Request log: the row contract, both backends' stores (reached through Store.requestLog)
// and the writer that keeps inserts off the hot path.
export type { BillingStatus, RequestLogPage, RequestLogQuery, RequestLogRow, RequestLogStore, RequestUsage } from './types.js'
export { BILLING_STATUSES, assertRequestLogRows, checkRequestLogRow, looksLikeKey } from './validate.js'
export { InvalidCursorError, RequestLogError } from './errors.js'
export type { RequestLogErrorCode } from './errors.js'
export { RequestLogWriter, systemTimers } from './writer.js'
export type { RequestLogWriterOptions, WriterTimers } from './writer.js'
