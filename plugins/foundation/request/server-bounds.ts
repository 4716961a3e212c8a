import type { ServerOptions } from 'node:http'
import type { ServerConfig } from '../config/types.js'

/**
 * Fastify/Node server options from `server`: the socket idle timeout, the keep-alive timeout,
 * the headers deadline, and Node's own whole-request deadline as a backstop. The body deadline
 * that answers in the family's envelope is read-body.ts's (request_timeout_ms); Node's fires a
 * little later, for what that one cannot see, and answers a bare 408.
 */
export interface ServerBounds {
  connectionTimeout: number
  keepAliveTimeout: number
  requestTimeout: number
  http: ServerOptions
}

export function serverBounds (server: ServerConfig): ServerBounds {
  const requestTimeout = server.request_timeout_ms + Math.max(2000, Math.floor(server.request_timeout_ms / 4))
  return {
    connectionTimeout: server.connection_idle_timeout_ms,
    keepAliveTimeout: server.keep_alive_timeout_ms,
    requestTimeout,
    http: {
      headersTimeout: Math.min(server.headers_timeout_ms, requestTimeout),
      // How often Node checks the headers and request deadlines (its default is 30 s).
      connectionsCheckingInterval: Math.max(100, Math.min(1000, Math.floor(server.headers_timeout_ms / 4)))
    }
  }
}
