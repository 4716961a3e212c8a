// Redis pub/sub invalidation for many instances.
//
// One connection is in subscriber mode (Redis allows nothing else on it), one
// publishes. Messages published while our subscriber is disconnected are lost, so
// after every reconnect we tell local subscribers to drop everything; the cache TTL
// bounds staleness in the meantime.
import { randomUUID } from 'node:crypto'
import { Redis } from 'ioredis'
import {
  type InvalidationBus,
  type InvalidationHandler,
  type InvalidationMessage,
  parseInvalidationMessage,
} from './invalidation-bus.js'

/**
 * Redis pub/sub channel on which store mutations are announced, so that every running
 * instance drops its cached copy of a changed key or account. The server subscribes its
 * KeyCache's RedisInvalidationBus to this channel; the CLI publishes on it.
 */
export const KEY_INVALIDATION_CHANNEL = 'model-gateway:keys'

export interface RedisInvalidationBusOptions {
  /** Connection problems; default: a process warning per distinct message. */
  onError?: (err: Error) => void
}

export class RedisInvalidationBus implements InvalidationBus {
  private readonly pub: Redis
  private readonly sub: Redis
  private readonly handlers = new Set<InvalidationHandler>()
  // Lets us skip our own echo: local subscribers already got the message in publish().
  private readonly origin = randomUUID()
  private readonly subscribed: Promise<void>
  private connectedOnce = false
  private closed = false

  constructor (
    redisUrl: string,
    private readonly channel: string,
    opts: RedisInvalidationBusOptions = {}
  ) {
    const onError = opts.onError ?? warnOnce()
    // Named so an operator can tell these apart in CLIENT LIST.
    const name = `gateway-invalidation:${channel.replace(/[^\x21-\x7e]/g, '_')}`
    // A publish must not hang a store mutation for long when Redis is away.
    this.pub = new Redis(redisUrl, { maxRetriesPerRequest: 1, connectionName: `${name}:pub` })
    this.sub = new Redis(redisUrl, { connectionName: `${name}:sub` })
    this.pub.on('error', onError)
    this.sub.on('error', onError)
    this.sub.on('message', (ch: string, payload: string) => this.onMessage(ch, payload))
    this.sub.on('ready', () => this.onReady())
    this.subscribed = this.sub.subscribe(channel).then(() => undefined)
    // ready() reports the failure; this keeps an unawaited rejection from crashing.
    this.subscribed.catch(() => {})
  }

  async ready (): Promise<void> {
    await Promise.all([this.subscribed, this.pub.ping()])
  }

  async publish (message: InvalidationMessage): Promise<void> {
    this.deliver(message)
    await this.pub.publish(this.channel, JSON.stringify({ ...message, origin: this.origin }))
  }

  subscribe (handler: InvalidationHandler): () => void {
    this.handlers.add(handler)
    return () => this.handlers.delete(handler)
  }

  async close (): Promise<void> {
    if (this.closed) return
    this.closed = true
    this.handlers.clear()
    await Promise.all([quit(this.sub), quit(this.pub)])
  }

  private onReady (): void {
    if (!this.connectedOnce) {
      this.connectedOnce = true
      return
    }
    // ioredis re-subscribes on reconnect before this PING; once it answers we are
    // receiving again, and anything cached before now may have missed a message.
    this.sub.ping().then(
      () => this.deliver({ kind: 'all' }),
      () => {}
    )
  }

  private onMessage (channel: string, payload: string): void {
    if (channel !== this.channel) return
    let parsed: unknown
    try {
      parsed = JSON.parse(payload)
    } catch {
      return
    }
    if (typeof parsed === 'object' && parsed !== null && Reflect.get(parsed, 'origin') === this.origin) return
    const message = parseInvalidationMessage(parsed)
    if (message) this.deliver(message)
  }

  private deliver (message: InvalidationMessage): void {
    for (const handler of this.handlers) handler(message)
  }
}

async function quit (conn: Redis): Promise<void> {
  try {
    await Promise.race([conn.quit(), new Promise((resolve) => setTimeout(resolve, 1000).unref())])
  } catch {
    // Already closed or never connected: nothing left to flush.
  }
  conn.disconnect()
}

function warnOnce (): (err: Error) => void {
  let last = ''
  return (err) => {
    if (err.message === last) return
    last = err.message
    process.emitWarning(`redis invalidation bus: ${err.message}`)
  }
}
