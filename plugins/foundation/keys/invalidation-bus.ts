// Cache invalidation between gateway instances.
//
// Store mutations publish; every instance's KeyCache subscribes. In-process for a
// single node, Redis pub/sub (redis-invalidation-bus.ts) for many.
import { EventEmitter } from 'node:events'

export type InvalidationMessage =
  | { kind: 'key'; id: string }
  | { kind: 'account'; id: string }
  /** Drop everything: sent after a lost connection, when messages may have been missed. */
  | { kind: 'all' }

export type InvalidationHandler = (message: InvalidationMessage) => void

export interface InvalidationBus {
  /** Resolves once messages from other instances are being received. */
  ready(): Promise<void>
  /** Delivers to local subscribers at once and to other instances as soon as possible. */
  publish(message: InvalidationMessage): Promise<void>
  /** Returns an unsubscribe function. */
  subscribe(handler: InvalidationHandler): () => void
  close(): Promise<void>
}

const EVENT = 'invalidate'

export class LocalInvalidationBus implements InvalidationBus {
  private readonly emitter = new EventEmitter()

  constructor () {
    // Every KeyCache and test harness subscribes; the default limit of 10 would warn.
    this.emitter.setMaxListeners(0)
  }

  async ready (): Promise<void> {}

  async publish (message: InvalidationMessage): Promise<void> {
    this.emitter.emit(EVENT, message)
  }

  subscribe (handler: InvalidationHandler): () => void {
    this.emitter.on(EVENT, handler)
    return () => this.emitter.off(EVENT, handler)
  }

  async close (): Promise<void> {
    this.emitter.removeAllListeners(EVENT)
  }
}

/** Narrow an untrusted payload (e.g. from Redis) to a message, or null. */
export function parseInvalidationMessage (value: unknown): InvalidationMessage | null {
  if (typeof value !== 'object' || value === null) return null
  const kind: unknown = Reflect.get(value, 'kind')
  if (kind === 'all') return { kind }
  const id: unknown = Reflect.get(value, 'id')
  if ((kind === 'key' || kind === 'account') && typeof id === 'string' && id !== '') return { kind, id }
  return null
}
