// What RequestLogWriter hands to onError, with the rows concerned.

/**
 * FLUSH_FAILED: an insert failed; the rows are kept and retried (`dropped` false).
 * QUEUE_FULL: more than maxQueue rows were pending; these oldest ones were dropped.
 * INVALID_ROW: refused by write() (see checkRequestLogRow); never queued.
 * WRITER_CLOSED: written after close() resolved; not stored.
 * CLOSE_TIMEOUT: close() gave up after closeTimeoutMs (database down); not stored.
 */
export type RequestLogErrorCode = 'FLUSH_FAILED' | 'QUEUE_FULL' | 'INVALID_ROW' | 'WRITER_CLOSED' | 'CLOSE_TIMEOUT'

export class RequestLogError extends Error {
  override readonly name = 'RequestLogError'
  readonly code: RequestLogErrorCode
  /** True when the rows handed to onError with this error will never be stored. */
  readonly dropped: boolean

  constructor (code: RequestLogErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.code = code
    this.dropped = code !== 'FLUSH_FAILED'
  }
}

/** A `before` cursor that no list() returned: a caller mistake, told apart by class. */
export class InvalidCursorError extends RangeError {
  override readonly name = 'InvalidCursorError'
  constructor () {
    super('invalid request log cursor')
  }
}
