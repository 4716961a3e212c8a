import type { Redis } from 'ioredis'

// Every script reads the time from Redis (`TIME`), so instances whose clocks disagree still
// share one window, and writes a TTL on every key it touches: no key outlives its use.

/**
 * Admission: requests per minute, plus a stream lease when the route always streams, in one
 * round trip. KEYS: the key's window (sorted set, member = request id, score = admission ms),
 * the account's leases (sorted set, member = request id, score = expiry ms).
 * ARGV: limit, window ms, request id, stream limit (0: no lease), lease TTL ms.
 * Returns { 0, 0 } admitted, { 1, ms to wait } over the rate, { 2, 0 } over the streams.
 * A refused request is not counted: only admissions fill the window.
 */
const ADMIT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local streams = tonumber(ARGV[4])
local ttl = tonumber(ARGV[5])
if streams > 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
  if redis.call('ZCARD', KEYS[2]) >= streams then return {2, 0} end
end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
local n = redis.call('ZCARD', KEYS[1])
if n >= limit then
  local oldest = redis.call('ZRANGE', KEYS[1], n - limit, n - limit, 'WITHSCORES')
  local wait = tonumber(oldest[2]) + window - now
  if wait < 1 then wait = 1 end
  return {1, wait}
end
redis.call('ZADD', KEYS[1], now, ARGV[3])
redis.call('PEXPIRE', KEYS[1], window)
if streams > 0 then
  redis.call('ZADD', KEYS[2], now + ttl, ARGV[3])
  if redis.call('PTTL', KEYS[2]) < ttl then redis.call('PEXPIRE', KEYS[2], ttl) end
end
return {0, 0}
`

/**
 * A stream lease taken once the body said `stream: true`. KEYS: the account's leases.
 * ARGV: stream limit, lease TTL ms, request id. Expired leases (a crashed instance's) are
 * pruned first. Returns 1 taken, 0 over the limit.
 */
const LEASE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then return 0 end
redis.call('ZADD', KEYS[1], now + ttl, ARGV[3])
if redis.call('PTTL', KEYS[1]) < ttl then redis.call('PEXPIRE', KEYS[1], ttl) end
return 1
`

/**
 * Renews a live stream's lease: its expiry moves to now + TTL. A lease that is gone (expired
 * and pruned) is not taken again. KEYS: the account's leases. ARGV: lease TTL ms, request id.
 */
const RENEW = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[1])
local changed = redis.call('ZADD', KEYS[1], 'XX', 'CH', now + ttl, ARGV[2])
if changed > 0 and redis.call('PTTL', KEYS[1]) < ttl then redis.call('PEXPIRE', KEYS[1], ttl) end
return changed
`

export interface LimitsCommands {
  gwLimitAdmit (rate: string, leases: string, limit: number, windowMs: number, id: string, streams: number, leaseTtlMs: number): Promise<[number, number]>
  gwLeaseTake (leases: string, limit: number, leaseTtlMs: number, id: string): Promise<number>
  gwLeaseRenew (leases: string, leaseTtlMs: number, id: string): Promise<number>
}

export type LimitsClient = Redis & LimitsCommands

/** Defines the scripts on the client (EVALSHA, loaded on first use); idempotent. */
export function withLimitsCommands (client: Redis): LimitsClient {
  const c = client as LimitsClient
  if (typeof c.gwLimitAdmit !== 'function') {
    client.defineCommand('gwLimitAdmit', { numberOfKeys: 2, lua: ADMIT })
    client.defineCommand('gwLeaseTake', { numberOfKeys: 1, lua: LEASE })
    client.defineCommand('gwLeaseRenew', { numberOfKeys: 1, lua: RENEW })
  }
  return c
}
