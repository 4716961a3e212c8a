import type { Socket } from 'node:net'
import type { FastifyInstance } from 'fastify'
import { gatewayError } from '../../foundation/errors/index.js'

const OVER_CAP = Symbol('gateway.overConnectionCap')
type MarkedSocket = Socket & { [OVER_CAP]?: true }

/** Open connections per client address; the count is exact (each socket adds once, leaves once). */
export class ConnectionCounts {
  private readonly open = new Map<string, number>()

  /** Counts a new connection; false when it is over `max`. */
  add (address: string, max: number): boolean {
    const n = (this.open.get(address) ?? 0) + 1
    this.open.set(address, n)
    return n <= max
  }

  remove (address: string): void {
    const left = (this.open.get(address) ?? 1) - 1
    if (left <= 0) this.open.delete(address)
    else this.open.set(address, left)
  }

  of (address: string): number {
    return this.open.get(address) ?? 0
  }
}

/**
 * Caps the connections one client address may hold open (server.max_connections_per_address;
 * 0: no cap). A connection over the cap is accepted, so its request can be answered in its
 * family's envelope: LIMIT_RATE_EXCEEDED, then the connection is closed. One Map entry per
 * address with connections open; nothing per request but one property read.
 */
export function capConnectionsPerAddress (app: FastifyInstance, max: number): ConnectionCounts {
  const counts = new ConnectionCounts()
  if (max <= 0) return counts
  app.server.on('connection', (socket: MarkedSocket) => {
    const address = socket.remoteAddress ?? 'unknown'
    if (!counts.add(address, max)) socket[OVER_CAP] = true
    socket.once('close', () => { counts.remove(address) })
  })
  // A callback hook, not an async one: no promise per request on the hot path.
  app.addHook('onRequest', (req, _reply, done) => {
    if ((req.raw.socket as MarkedSocket)[OVER_CAP] === true) {
      done(gatewayError('LIMIT_RATE_EXCEEDED', { closeConnection: true, retryAfterSeconds: 1, detail: 'Too many connections are open from this address.' }))
      return
    }
    done()
  })
  return counts
}
