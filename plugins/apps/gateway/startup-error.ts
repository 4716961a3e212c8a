// Start-up failures as one line each: what failed, where (never a credential), and the cause.
// `serve` prints the line and exits non-zero; no stack trace reaches the operator.
import { ServerSecretError } from '../../foundation/keys/server-secret.js'

/** A start-up step that failed, with the line `serve` prints for it. */
export class StartupError extends Error {
  constructor (message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.name = 'StartupError'
  }
}

/** `host:port/path` of a connection URL without its user, password or query (which may hold one). */
export function whereOf (url: string, defaultPort: number): string {
  try {
    const u = new URL(url)
    const path = u.pathname === '/' ? '' : u.pathname
    return `${u.hostname}:${u.port === '' ? defaultPort : u.port}${path}`
  } catch {
    return '(an unparsable URL)'
  }
}

/** The first line of an error's message, with its system code when it has one (ECONNREFUSED). */
export function causeOf (err: unknown): string {
  const e = err as { code?: unknown, message?: unknown } | null
  const message = typeof e?.message === 'string' && e.message !== '' ? e.message : String(err)
  const first = message.split('\n', 1)[0] ?? message
  const code = typeof e?.code === 'string' && !first.includes(e.code) ? ` (${e.code})` : ''
  return `${first}${code}`
}

/** The one line an operator reads for a failed start. */
export function startupLine (err: unknown): string {
  if (err instanceof StartupError || err instanceof ServerSecretError) return err.message.split('\n', 1)[0] ?? err.message
  return causeOf(err)
}

/** A listen() failure: the port in use, or not ours to bind. */
export function listenFailure (what: string, host: string, port: number, err: unknown): StartupError {
  const code = (err as { code?: unknown } | null)?.code
  if (code === 'EADDRINUSE') return new StartupError(`${what} cannot listen on ${host}:${port}: the port is in use (EADDRINUSE); stop the other process or set another port`, { cause: err })
  if (code === 'EACCES') return new StartupError(`${what} cannot listen on ${host}:${port}: permission denied (EACCES); use a port above 1023`, { cause: err })
  if (code === 'EADDRNOTAVAIL') return new StartupError(`${what} cannot listen on ${host}:${port}: no such local address (EADDRNOTAVAIL)`, { cause: err })
  return new StartupError(`${what} cannot listen on ${host}:${port}: ${causeOf(err)}`, { cause: err })
}
