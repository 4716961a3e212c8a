// Reads a request body under the gateway's bounds: a byte cap (Content-Length checked first,
// then the bytes as they come), a deadline for the whole body, and the guards of body-guards.ts
// fed chunk by chunk. A body that breaks a bound is refused at once, without reading the rest.
import type { Readable } from 'node:stream'
import { gatewayError, type GatewayError } from '../errors/index.js'

/** A check run on each chunk as it arrives; false refuses the body. */
export interface ChunkGuard {
  push (chunk: Buffer): boolean
}

export interface ReadBounds {
  limit: number
  /** Refuses a body the guard rejects, with this error. */
  guard?: { check: ChunkGuard, error: () => GatewayError }
}

interface Pending {
  startedAt: number
  expire: () => void
  prev: Pending | null
  next: Pending | null
  /** In the list (false once deleted or expired: a second delete does nothing). */
  linked: boolean
}

/**
 * Deadlines of the bodies being read: one interval timer for all of them (started with the
 * first, stopped by a sweep that finds none), never a timer per request or per chunk. A body is refused at
 * most one sweep period after its deadline.
 *
 * The bodies are a list linked through their own entries: adding and deleting one allocates
 * nothing else. A Set of them rehashed its table as requests came and went (each new table
 * a young object an old Set points to), 2.3 µs a request at 50 connections (cpu-prof, 2026-11-27).
 */
export class BodyDeadlines {
  private head: Pending | null = null
  private tail: Pending | null = null
  private count = 0
  private timer: NodeJS.Timeout | undefined
  private readonly period: number

  constructor (readonly timeoutMs: number, private readonly now: () => number = Date.now) {
    this.period = Math.max(10, Math.min(1000, Math.floor(timeoutMs / 4)))
  }

  add (expire: () => void): Pending {
    const p: Pending = { startedAt: this.now(), expire, prev: this.tail, next: null, linked: true }
    if (this.tail === null) this.head = p
    else this.tail.next = p
    this.tail = p
    this.count++
    if (this.timer === undefined) {
      this.timer = setInterval(() => { this.sweep() }, this.period)
      this.timer.unref()
    }
    return p
  }

  delete (p: Pending): void {
    if (!p.linked) return
    p.linked = false
    if (p.prev === null) this.head = p.next
    else p.prev.next = p.next
    if (p.next === null) this.tail = p.prev
    else p.next.prev = p.prev
    p.prev = null
    p.next = null
    this.count--
  }

  private sweep (): void {
    // Stopped by a sweep that finds nothing pending, not by the last delete: a steady trickle
    // of requests then starts one timer per idle period, not one per request.
    if (this.count === 0) {
      clearInterval(this.timer)
      this.timer = undefined
      return
    }
    const due = this.now() - this.timeoutMs
    // The due ones first, then their expiry: an expiry that ends other reads cannot cut the walk.
    const expired: Pending[] = []
    for (let p = this.head; p !== null; p = p.next) if (p.startedAt <= due) expired.push(p)
    for (const p of expired) {
      if (!p.linked) continue
      this.delete(p)
      p.expire()
    }
  }
}

/**
 * Reads `payload` whole into one Buffer within `bounds` and the deadline. `declaredLength` is
 * the Content-Length header, if any (a body announced over the cap is refused unread).
 */
export function readBody (payload: Readable, declaredLength: string | undefined, bounds: ReadBounds, deadlines: BodyDeadlines): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    if (declaredLength !== undefined) {
      const n = Number(declaredLength)
      if (Number.isFinite(n) && n > bounds.limit) {
        reject(gatewayError('REQUEST_TOO_LARGE', { closeConnection: true }))
        return
      }
    }
    const chunks: Buffer[] = []
    let received = 0
    let done = false
    const stop = (err: GatewayError | null): void => {
      if (done) return
      done = true
      deadlines.delete(pending)
      payload.off('data', onData)
      payload.off('end', onEnd)
      payload.off('error', onError)
      if (err === null) {
        resolve(chunks.length === 1 ? chunks[0] as Buffer : Buffer.concat(chunks, received))
        return
      }
      // What was buffered is dropped now; the rest is not read (the answer closes the connection).
      chunks.length = 0
      payload.pause()
      reject(err)
    }
    const onData = (chunk: Buffer): void => {
      received += chunk.length
      if (received > bounds.limit) { stop(gatewayError('REQUEST_TOO_LARGE', { closeConnection: true })); return }
      if (bounds.guard && !bounds.guard.check.push(chunk)) { stop(bounds.guard.error()); return }
      chunks.push(chunk)
    }
    const onEnd = (): void => { stop(null) }
    // The client went away mid-body: nobody reads the answer, this only ends the request.
    const onError = (): void => { stop(gatewayError('REQUEST_CLIENT_DISCONNECTED')) }
    // A refusal leaves unread bytes behind: its answer closes the connection.
    const pending = deadlines.add(() => { stop(gatewayError('REQUEST_TIMEOUT', { closeConnection: true, detail: 'The request body did not arrive in time.' })) })
    payload.on('data', onData)
    payload.once('end', onEnd)
    payload.once('error', onError)
  })
}
