import { randomFillSync } from 'node:crypto'

// Random bytes for ids, drawn from a pool one system call refills every 409 ids.
const pool = Buffer.alloc(4090)
let poolAt = pool.length
// The id's time part, kept for the millisecond it was made in (a few ids share one).
let lastMs = -1
let lastHead = ''

/**
 * `req_` + 32 hex digits: 12 of the time in milliseconds, then 20 random ones (80 bits, as the
 * v4 UUID's digits it took before, without their fixed version and variant). Ids sort by time,
 * so request log rows are appended at the end of their index instead of on random pages.
 */
export function newRequestId (): string {
  const ms = Date.now()
  if (ms !== lastMs) {
    lastMs = ms
    lastHead = `req_${ms.toString(16).padStart(12, '0')}`
  }
  if (poolAt === pool.length) {
    randomFillSync(pool)
    poolAt = 0
  }
  const at = poolAt
  poolAt += 10
  return lastHead + pool.toString('hex', at, at + 10)
}
