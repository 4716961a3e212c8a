import { randomUUID } from 'node:crypto'

/**
 * `req_` + 32 hex digits: 12 of the time in milliseconds, then 20 random ones (a v4 UUID's,
 * without its fixed version and variant digits). Ids sort by time, so request log rows are
 * appended at the end of their index instead of on random pages.
 */
export function newRequestId (): string {
  const uuid = randomUUID()
  // xxxxxxxx-xxxx-4xxx-Vxxx-xxxxxxxxxxxx: the 8+4+3+3+12 digits that are random.
  const random = uuid.slice(0, 8) + uuid.slice(9, 13) + uuid.slice(15, 18) + uuid.slice(20, 23) + uuid.slice(24, 26)
  return `req_${Date.now().toString(16).padStart(12, '0')}${random}`
}
