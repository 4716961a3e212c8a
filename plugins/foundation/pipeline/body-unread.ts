// Part of the host's request lifecycle (the pipeline and the admin API both answer refusals
// before a body arrived), so it lives in the foundation, not in the request concern.
import type { IncomingMessage } from 'node:http'

/**
 * Whether a request declared a body that has not been read to its end: an answer sent now must
 * close the connection (`Connection: close`), or Node would go on reading the rest to keep it
 * alive, as slowly as the client sends it. A request without a body keeps its connection.
 */
export function bodyUnread (req: IncomingMessage): boolean {
  if (req.complete) return false
  const length = req.headers['content-length']
  return req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0')
}
