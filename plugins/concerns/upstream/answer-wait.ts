import type { ServerResponse } from 'node:http'
import { CancelSignal } from './cancel-signal.js'

/**
 * The wait for a non-streamed answer's headers, watched for the client leaving. Such an answer's
 * first byte comes only once the provider has generated all of it (up to answer_timeout_ms), so
 * a client that leaves during the wait follows its provider's disconnect policy here, as a
 * stream's client does in relay.ts:
 *
 * - cancel (default, drainMs 0): the call is aborted at once (undici closes the upstream
 *   connection, the provider stops generating); the request settles on the estimate.
 * - drain (`drain_on_disconnect`): the wait goes on, for at most drainMs from the moment the
 *   client left (and answer_timeout_ms); an answer that comes in time is read for its usage by
 *   the relay, within what is left of the same window (remainingDrainMs); past the window the
 *   call is aborted as above.
 *
 * One per attempt of a non-streamed answer (a stream's first event comes as generation starts,
 * and a job create must be read whatever happens: the provider may have created the job).
 */
export class AnswerWait {
  private readonly controller = new CancelSignal()
  private timer: NodeJS.Timeout | undefined
  private leftAt = 0
  /** True once the call was aborted because the client left (at once, or past the drain window). */
  cancelled = false

  constructor (
    private readonly res: ServerResponse,
    private readonly drainMs: number,
    /** The route's first-byte deadline, which aborts the call too (not a client that left). */
    private readonly deadline: CancelSignal | undefined
  ) {
    // on/off rather than once: stop() removes it whenever the answer comes, and onClose acts once.
    res.on('close', this.onClose)
    deadline?.on('abort', this.onDeadline)
  }

  get signal (): CancelSignal {
    return this.controller
  }

  /** Whether the client left during the wait. */
  get left (): boolean {
    return this.leftAt !== 0
  }

  /** What is left of the drain window for reading the answer (the whole window if the client is still there). */
  remainingDrainMs (): number {
    if (this.leftAt === 0) return this.drainMs
    return Math.max(1, this.leftAt + this.drainMs - Date.now())
  }

  /** The headers arrived or the call failed: the relay (or the error path) takes over. */
  stop (): void {
    this.res.off('close', this.onClose)
    this.deadline?.off('abort', this.onDeadline)
    if (this.timer !== undefined) clearTimeout(this.timer)
  }

  private readonly cancel = (): void => {
    this.cancelled = true
    this.controller.abort()
  }

  private readonly onDeadline = (): void => {
    this.controller.abort()
  }

  private readonly onClose = (): void => {
    if (this.res.writableFinished || this.leftAt !== 0) return
    this.leftAt = Date.now()
    if (this.drainMs <= 0) {
      this.cancel()
      return
    }
    this.timer = setTimeout(this.cancel, this.drainMs)
    this.timer.unref()
  }
}
