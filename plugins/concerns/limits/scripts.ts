import type { Redis } from 'ioredis'

// Every script reads the time from Redis (`TIME`), so instances whose clocks disagree still
// share one window, and writes a TTL on every key it touches: no key outlives its use.

/**
 * Admission, in one round trip: requests per minute in the account's window (its tier bounds the
 * sum of all its keys) and, when the key has a policy of its own, in the key's window; plus the
 * stream leases when the route always streams (the account's, and the key's own when it has
 * one). KEYS: the account's window, the key's window (sorted sets, member = request id, score =
 * admission ms), the account's leases, the key's leases (sorted sets, member = request id, score
 * = expiry ms). ARGV: account limit, key limit (0: no key window), window ms, request id, account
 * stream limit (0: no lease), key stream limit (0: none), lease TTL ms.
 * Returns { 0, 0, 0 } admitted; { 1, ms to wait, who } over a rate (the longer wait of the two
 * windows); { 2, 0, who } over the streams; who: 1 the account, 2 the key.
 * A refused request is counted nowhere: only admissions fill the windows, and both windows are
 * asked before either is written.
 */
const ADMIT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local alimit = tonumber(ARGV[1])
local klimit = tonumber(ARGV[2])
local window = tonumber(ARGV[3])
local streams = tonumber(ARGV[5])
local kstreams = tonumber(ARGV[6])
local ttl = tonumber(ARGV[7])
if streams > 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)
  if redis.call('ZCARD', KEYS[3]) >= streams then return {2, 0, 1} end
  if kstreams > 0 then
    redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', now)
    if redis.call('ZCARD', KEYS[4]) >= kstreams then return {2, 0, 2} end
  end
end
local function wait (key, limit)
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
  local n = redis.call('ZCARD', key)
  if n < limit then return 0 end
  local oldest = redis.call('ZRANGE', key, n - limit, n - limit, 'WITHSCORES')
  local w = tonumber(oldest[2]) + window - now
  if w < 1 then w = 1 end
  return w
end
local wa = wait(KEYS[1], alimit)
local wk = 0
if klimit > 0 then wk = wait(KEYS[2], klimit) end
if wa > 0 or wk > 0 then
  if wk > wa then return {1, wk, 2} end
  return {1, wa, 1}
end
redis.call('ZADD', KEYS[1], now, ARGV[4])
redis.call('PEXPIRE', KEYS[1], window)
if klimit > 0 then
  redis.call('ZADD', KEYS[2], now, ARGV[4])
  redis.call('PEXPIRE', KEYS[2], window)
end
if streams > 0 then
  redis.call('ZADD', KEYS[3], now + ttl, ARGV[4])
  if redis.call('PTTL', KEYS[3]) < ttl then redis.call('PEXPIRE', KEYS[3], ttl) end
  if kstreams > 0 then
    redis.call('ZADD', KEYS[4], now + ttl, ARGV[4])
    if redis.call('PTTL', KEYS[4]) < ttl then redis.call('PEXPIRE', KEYS[4], ttl) end
  end
end
return {0, 0, 0}
`

/**
 * A stream lease taken once the body said `stream: true`. KEYS: the account's leases, the key's
 * leases. ARGV: account stream limit, key stream limit (0: the key has no policy of its own),
 * lease TTL ms, request id. Expired leases (a crashed instance's) are pruned first.
 * Returns 1 taken, 0 over the account's limit, 2 over the key's.
 */
const LEASE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local klimit = tonumber(ARGV[2])
local ttl = tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then return 0 end
if klimit > 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
  if redis.call('ZCARD', KEYS[2]) >= klimit then return 2 end
  redis.call('ZADD', KEYS[2], now + ttl, ARGV[4])
  if redis.call('PTTL', KEYS[2]) < ttl then redis.call('PEXPIRE', KEYS[2], ttl) end
end
redis.call('ZADD', KEYS[1], now + ttl, ARGV[4])
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
  gwLimitAdmit (
    accountRate: string, keyRate: string, accountLeases: string, keyLeases: string,
    accountLimit: number, keyLimit: number, windowMs: number, id: string, accountStreams: number, keyStreams: number, leaseTtlMs: number
  ): Promise<[number, number, number]>
  gwLeaseTake (accountLeases: string, keyLeases: string, accountLimit: number, keyLimit: number, leaseTtlMs: number, id: string): Promise<number>
  gwLeaseRenew (leases: string, leaseTtlMs: number, id: string): Promise<number>
}

export type LimitsClient = Redis & LimitsCommands

/** Defines the scripts on the client (EVALSHA, loaded on first use); idempotent. */
export function withLimitsCommands (client: Redis): LimitsClient {
  const c = client as LimitsClient
  if (typeof c.gwLimitAdmit !== 'function') {
    client.defineCommand('gwLimitAdmit', { numberOfKeys: 4, lua: ADMIT })
    client.defineCommand('gwLeaseTake', { numberOfKeys: 2, lua: LEASE })
    client.defineCommand('gwLeaseRenew', { numberOfKeys: 1, lua: RENEW })
  }
  return c
}
