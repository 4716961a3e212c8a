// The client's wait for the upstream's first byte (its response headers), bounded per route by
// `first_byte_timeout_ms`: past it the upstream call in flight is cancelled (undici aborts the
// request and closes its connection) and the request ends with REQUEST_TIMEOUT (408), before
// any answer, so the hold is released and nothing is billed. One timer per request, and only
// on routes that set the value.

import { CancelSignal } from './cancel-signal.js'

export class FirstByteDeadline {
  private readonly controller = new CancelSignal()
  private readonly timer: NodeJS.Timeout
  /** True once the deadline passed before the first byte. */
  expired = false

  constructor (readonly ms: number) {
    this.timer = setTimeout(() => {
      this.expired = true
      this.controller.abort()
    }, ms)
    this.timer.unref()
  }

  get signal (): CancelSignal {
    return this.controller
  }

  /** The first byte arrived (or the request ended otherwise): the deadline no longer applies. */
  clear (): void {
    clearTimeout(this.timer)
  }
}
