// An account's tier bounds the sum of its keys: five keys of a free-tier account (60 rpm, 4
// streams in the shipped gateway.yaml) get 60 requests a minute and 4 streams between them, on
// one instance (SQLite, in-process limiter) and across two instances (PostgreSQL + Redis, one Lua
// script per admission). A key bound to a lower policy is held to it as well.
import t, { type Test } from 'tap'
import { randomUUID } from 'node:crypto'
import { Redis } from 'ioredis'
import { compilePolicies, Limiter, type RequestLimits, type StreamLease } from '../plugins/concerns/limits/index.js'
import type { LimitsConfig } from '../plugins/foundation/config/types.js'
import { systemClock } from '../plugins/foundation/store/clock.js'
import { startTestGateway, TEST_REDIS_URL, type TestGateway } from './helpers/gateway.js'

// Two instances, hundreds of requests, streams held open: slow on a loaded machine.
t.setTimeout(300_000)

const CHAT = JSON.stringify({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] })
const STREAM = JSON.stringify({ model: 'openai/gpt-4o-mini', stream: true, messages: [{ role: 'user', content: 'hi' }] })
const LONG = { 'x-mock-chunks': '2000', 'x-mock-chunk-delay-ms': '50' }

/** Four more keys on the seeded (free-tier) account: five in all, none with a policy of its own. */
async function fiveKeys (gw: TestGateway): Promise<string[]> {
  const keys = [gw.key]
  for (let i = 2; i <= 5; i++) {
    const k = await gw.services.store.keys.create({ accountId: gw.account.id, name: `key ${i}` })
    if (!k.ok) throw new Error(k.error)
    keys.push(k.value.plaintext)
  }
  return keys
}

interface Answer { status: number, code: string | null, key: number }

/** 60 requests per key, all at once, spread over the instances. */
async function burst (instances: TestGateway[], keys: string[]): Promise<Answer[]> {
  const sends: Array<Promise<Answer>> = []
  for (let i = 0; i < 60; i++) {
    keys.forEach((key, k) => {
      const gw = instances[(i + k) % instances.length] as TestGateway
      sends.push(fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: CHAT })
        .then(async (res) => {
          await res.arrayBuffer()
          return { status: res.status, code: res.headers.get('x-gateway-error-code'), key: k }
        }))
    })
  }
  return await Promise.all(sends)
}

function checkBurst (t: Test, answers: Answer[], mockCalls: number): void {
  t.equal(answers.length, 300, '5 keys x 60 requests answered')
  const served = answers.filter((a) => a.status === 200)
  t.equal(served.length, 60, 'exactly 60 served: the free tier\'s 60 rpm bounds the account, not each key')
  t.equal(answers.filter((a) => a.status === 429 && a.code === 'LIMIT_RATE_EXCEEDED').length, 240, 'the other 240 refused with LIMIT_RATE_EXCEEDED')
  t.equal(mockCalls, 60, 'only the 60 served reached the upstream')
}

interface Opened { status: number, abort: AbortController }

async function openStreams (instances: TestGateway[], keys: string[], perKey: number): Promise<Opened[]> {
  const opens: Array<Promise<Opened>> = []
  keys.forEach((key, k) => {
    for (let i = 0; i < perKey; i++) {
      const gw = instances[(i + k) % instances.length] as TestGateway
      const abort = new AbortController()
      opens.push(fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', signal: abort.signal, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...LONG }, body: STREAM })
        .then(async (res) => {
          if (res.status !== 200) await res.arrayBuffer()
          return { status: res.status, abort }
        }))
    }
  })
  return await Promise.all(opens)
}

t.test('one instance (SQLite, in process): 5 keys x 60 requests of a free-tier account → exactly 60 served', async (t) => {
  const gw = await startTestGateway({ limits: 'config' })
  t.teardown(() => gw.close())
  t.equal(gw.account.tier, 'free', 'the seeded account is on the shipped free tier')
  t.equal(gw.config.limits.tiers.free?.requests_per_minute, 60, 'free: 60 rpm')
  t.equal(gw.config.limits.tiers.free?.concurrent_streams, 4, 'free: 4 streams')
  const keys = await fiveKeys(gw)
  checkBurst(t, await burst([gw], keys), gw.mock.calls.length)

  // The window is full for the minute: a fresh account on another tier is not affected.
  const other = await gw.services.store.accounts.create({ name: 'other', tier: 'free' })
  await gw.services.store.ledger.credit({ accountId: other.id, amount: 10_000_000_000n, kind: 'topup', postingId: `seed:${other.id}` })
  const otherKey = await gw.services.store.keys.create({ accountId: other.id, name: 'other' })
  if (!otherKey.ok) throw new Error(otherKey.error)
  const res = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${otherKey.value.plaintext}`, 'content-type': 'application/json' }, body: CHAT })
  t.equal(res.status, 200, 'another account has its own window')
  await res.arrayBuffer()
})

t.test('one instance: concurrent streams of 5 keys are bounded by the account (free: 4)', async (t) => {
  // A fresh instance: its rate window is empty, the streams are what is measured.
  const gw = await startTestGateway({ limits: 'config' })
  const keys = await fiveKeys(gw)
  const opened: Opened[] = []
  t.teardown(async () => {
    for (const o of opened) o.abort.abort()
    await gw.close()
  })
  opened.push(...await openStreams([gw], keys, 2))
  t.equal(opened.filter((o) => o.status === 200).length, 4, '10 streams asked by 5 keys: 4 open, the free tier\'s streams')
  t.equal(opened.filter((o) => o.status === 429).length, 6, 'the other 6 refused')
})

t.test('two instances (PostgreSQL + Redis): 5 keys x 60 requests → exactly 60 served', async (t) => {
  const channel = `test-account-${randomUUID()}`
  // The shipped tiers; a Redis timeout no loaded test machine reaches (past it an instance decides alone).
  const limits = { redis_timeout_ms: 10_000 }
  const a = await startTestGateway({ backend: 'pg', redisChannel: channel, limits })
  t.teardown(() => a.close())
  const b = await startTestGateway({ shareStoreWith: a, redisChannel: channel, limits, mock: a.mock })
  t.teardown(() => b.close())
  t.equal(a.config.limits.tiers.free?.requests_per_minute, 60, 'the shipped free tier: 60 rpm')
  const keys = await fiveKeys(a)
  checkBurst(t, await burst([a, b], keys), a.mock.calls.length)

  const redis = new Redis(TEST_REDIS_URL)
  t.teardown(() => redis.disconnect())
  t.equal(await redis.zcard(`${channel}:rpm-account:${a.account.id}`), 60, 'the account\'s shared window holds the 60 admissions')
  t.ok(await redis.pttl(`${channel}:rpm-account:${a.account.id}`) > 0, 'with a TTL')
})

t.test('two instances (PostgreSQL + Redis): streams of 5 keys bounded by the account across both', async (t) => {
  const channel = `test-account-streams-${randomUUID()}`
  const limits = { redis_timeout_ms: 10_000 }
  const a = await startTestGateway({ backend: 'pg', redisChannel: channel, limits })
  const b = await startTestGateway({ shareStoreWith: a, redisChannel: channel, limits, mock: a.mock })
  const keys = await fiveKeys(a)
  const opened: Opened[] = []
  t.teardown(async () => {
    for (const o of opened) o.abort.abort()
    await b.close()
    await a.close()
  })
  opened.push(...await openStreams([a, b], keys, 2))
  t.equal(opened.filter((o) => o.status === 200).length, 4, '10 streams over two instances: 4 open')
  t.equal(opened.filter((o) => o.status === 429).length, 6, 'the other 6 refused')
})

const TIERS: LimitsConfig['tiers'] = {
  low: { rank: 0, requests_per_minute: 2, concurrent_streams: 1, overdraft: '0' },
  high: { rank: 1, requests_per_minute: 5, concurrent_streams: 3, overdraft: '0' }
}
const CONFIG: LimitsConfig = { default_tier: 'low', tiers: TIERS, enabled: true, stream_lease_ttl_ms: 30000, stream_lease_renew_ms: 10000, redis_timeout_ms: 10_000, local_max_entries: 1000, max_keys_per_account: 50 }

for (const mode of ['in process', 'Redis'] as const) {
  t.test(`limiter (${mode}): a key bound to a lower policy is held to it, and the account's tier still bounds the sum`, async (t) => {
    const prefix = `test-key-policy-${randomUUID()}:`
    const client = mode === 'Redis' ? new Redis(TEST_REDIS_URL) : undefined
    const limiter = new Limiter({ config: CONFIG, clock: systemClock, ...(client ? { redis: { client, prefix } } : {}), warn: (err) => { t.fail(`Redis failed: ${String(err)}`) } })
    t.teardown(() => {
      limiter.close()
      client?.disconnect()
    })
    const policies = compilePolicies(CONFIG)
    const high = policies.tier('high')
    const bound = { account: high, key: policies.resolve('low', 'high') }
    t.equal(bound.key.name, 'low', 'the key\'s own policy is low')
    const admit = async (keyId: string, limits: RequestLimits): Promise<number> => {
      try {
        const lease = mode === 'Redis'
          ? await limiter.admit({ keyId, accountId: 'acct' }, randomUUID(), limits, false)
          : limiter.admitLocal({ keyId, accountId: 'acct' }, randomUUID(), limits, false)
        if (lease !== undefined) t.fail('no lease without a stream')
        return 200
      } catch (err) {
        return (err as { code?: string }).code === 'LIMIT_RATE_EXCEEDED' ? 429 : 500
      }
    }
    const seq = async (n: number, keyId: string, limits: RequestLimits): Promise<number[]> => {
      const out: number[] = []
      for (let i = 0; i < n; i++) out.push(await admit(keyId, limits))
      return out
    }
    t.same(await seq(3, 'k-low', bound), [200, 200, 429], 'the key bound to low: 2 rpm of its own')
    t.same(await seq(4, 'k-free', high.alone), [200, 200, 200, 429], 'a key without a policy: the account\'s 5 rpm minus the 2 the other key used')
    t.same(await seq(1, 'k-low', bound), [429], 'and the bound key stays refused')

    // Streams, on a fresh account: the key bound to low holds 1 stream; the account 3 in all.
    // Leases taken at admission (a route that always streams: the Lua admission script) and
    // once the body asked to stream (the lease script).
    const held: StreamLease[] = []
    const open = async (keyId: string, limits: RequestLimits, atAdmission: boolean): Promise<number> => {
      const who = { keyId, accountId: 'acct-streams' }
      try {
        const lease = atAdmission
          ? (mode === 'Redis' ? await limiter.admit(who, randomUUID(), limits, true) : limiter.admitLocal(who, randomUUID(), limits, true))
          : await limiter.lease(who, randomUUID(), limits)
        if (lease === undefined) return 500
        held.push(lease)
        return 200
      } catch {
        return 429
      }
    }
    t.same([await open('s-low', bound, true), await open('s-low', bound, false), await open('s-low', bound, true)], [200, 429, 429], 'the bound key: one stream, at admission or by the body')
    t.same([await open('s-a', high.alone, true), await open('s-b', high.alone, false), await open('s-c', high.alone, false), await open('s-d', high.alone, true)], [200, 200, 429, 429], 'the account: 3 streams in all, one of them the bound key\'s')
    limiter.release(held[0] as StreamLease)
    t.same([await open('s-low', bound, false), await open('s-low', bound, false)], [200, 429], 'the bound key\'s released lease frees its stream (and one of the account\'s)')
    for (const l of held.slice(1)) limiter.release(l)
  })
}
