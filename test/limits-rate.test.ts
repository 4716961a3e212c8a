// Requests per minute and the policy they follow: resolution (key → account tier → default,
// clamped), the sliding window in process and in Redis across two instances on one PostgreSQL
// schema, Retry-After, key TTLs, the refusal in every envelope, and what happens with Redis away.
import t from 'tap'
import { randomUUID } from 'node:crypto'
import { once } from 'node:events'
import { connect, createServer, type AddressInfo, type Socket } from 'node:net'
import { Redis } from 'ioredis'
import { compilePolicies, Limiter, LocalLimits } from '../plugins/concerns/limits/index.js'
import { systemClock } from '../plugins/foundation/store/clock.js'
import type { LimitsConfig } from '../plugins/foundation/config/types.js'
import { startTestGateway, TEST_REDIS_URL, type TestGateway } from './helpers/gateway.js'
import { closedPort } from './helpers/wire.js'

// Child processes, two instances and paced loops: slow on a loaded machine.
t.setTimeout(300_000)

const TIERS: LimitsConfig['tiers'] = {
  free: { rank: 0, requests_per_minute: 60, concurrent_streams: 4, overdraft: '0' },
  standard: { rank: 1, requests_per_minute: 600, concurrent_streams: 32, overdraft: '0' },
  enterprise: { rank: 2, requests_per_minute: 6000, concurrent_streams: 256, overdraft: '0' }
}
const BASE: LimitsConfig = { default_tier: 'free', tiers: TIERS, enabled: true, stream_lease_ttl_ms: 30000, stream_lease_renew_ms: 10000, redis_timeout_ms: 250, local_max_entries: 1000, max_keys_per_account: 50 }

const CHAT = JSON.stringify({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] })
const MESSAGES = JSON.stringify({ model: 'anthropic/claude-haiku-3.5', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] })
const GENAI = JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'hi' }] }] })

async function chat (gw: TestGateway, key = gw.key): Promise<Response> {
  return await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: CHAT })
}

t.test('policy resolution: key policy, else account tier, else the default; a key above its tier is clamped', async (t) => {
  const p = compilePolicies(BASE)
  t.equal(p.resolve(null, 'standard').name, 'standard', 'no key policy: the account tier')
  t.equal(p.resolve('free', 'enterprise').name, 'free', 'a key policy below the tier applies')
  t.equal(p.resolve('standard', 'standard').name, 'standard', 'a key policy equal to the tier applies')
  t.equal(p.resolve('enterprise', 'standard').name, 'standard', 'a key policy above the tier (tier lowered later) is clamped to the tier')
  t.equal(p.resolve('enterprise', 'free').requestsPerMinute, 60, 'clamped to the free tier: 60 rpm')
  t.equal(p.resolve(null, 'gone').name, 'free', 'an account tier no longer defined: the platform default')
  t.equal(p.resolve('gone', 'standard').name, 'standard', 'a key policy no longer defined: the account tier')
  t.same(p.ranked.map((x) => x.name), ['free', 'standard', 'enterprise'], 'tiers ranked lowest first')
  t.throws(() => compilePolicies({ ...BASE, default_tier: 'nope' }), /default_tier/)
})

t.test('in-process sliding window: exact per 60 s, the wait is to the oldest admission leaving', async (t) => {
  const l = new LocalLimits(60_000, 100)
  const t0 = 1_000_000
  for (let i = 0; i < 3; i++) t.equal(l.take('k', 3, t0 + i * 1000), 0, `admission ${i + 1} of 3`)
  t.equal(l.take('k', 3, t0 + 10_000), 50_000, 'the 4th waits until the first leaves the window (50 s)')
  t.equal(l.take('other', 3, t0 + 10_000), 0, 'another key has its own window')
  t.equal(l.take('k', 3, t0 + 59_999), 1, '1 ms before the first leaves: still refused')
  t.equal(l.take('k', 3, t0 + 60_000), 0, 'once the first left: admitted')
  t.equal(l.take('k', 3, t0 + 60_500), 500, 'full again: wait for the second (t0+1 s) to leave')
  t.equal(l.take('k', 1, t0 + 60_500), 59_500, 'limit lowered to 1: wait for the newest admission to leave')
  // Many admissions grow the ring and still count exactly.
  const m = new LocalLimits(60_000, 100)
  let admitted = 0
  for (let i = 0; i < 1000; i++) if (m.take('k', 700, t0 + i) === 0) admitted++
  t.equal(admitted, 700, '1000 requests within a second at 700 rpm: exactly 700 admitted')
  t.equal(m.take('k', 700, t0 + 60_000), 0, 'a minute after the first: one more fits')
})

t.test('60 rpm over two instances on one PostgreSQL schema and one Redis prefix: 600 requests in 10 s, exactly 60 admitted', async (t) => {
  const channel = `test-limits-${randomUUID()}`
  // The config's tiers, with a Redis timeout no loaded test machine reaches: past the default
  // 250 ms an instance decides alone (fail-open, tested below) and could admit one more.
  const limits = { redis_timeout_ms: 10_000 }
  const a = await startTestGateway({ backend: 'pg', redisChannel: channel, limits })
  t.teardown(() => a.close())
  const b = await startTestGateway({ shareStoreWith: a, redisChannel: channel, limits, mock: a.mock })
  t.teardown(() => b.close())
  t.equal(a.account.tier, 'free', 'the seeded account is on the default tier, 60 rpm')

  const answers: Array<{ status: number, retryAfter: string | null, code: string | null, at: number }> = []
  const started = Date.now()
  const sends: Array<Promise<void>> = []
  // 60 requests every second for 10 s, alternating instances.
  for (let second = 0; second < 10; second++) {
    const due = started + second * 1000
    const wait = due - Date.now()
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait))
    for (let i = 0; i < 60; i++) {
      const gw = i % 2 === 0 ? a : b
      sends.push(chat(gw).then(async (res) => {
        await res.arrayBuffer()
        answers.push({ status: res.status, retryAfter: res.headers.get('retry-after'), code: res.headers.get('x-gateway-error-code'), at: Date.now() - started })
      }))
    }
  }
  await Promise.all(sends)
  const elapsed = Date.now() - started
  // Paced at 60 a second for 10 s; on a loaded machine the answers may trail, but every request
  // must land within one 60 s window, or a second window's admissions would be allowed.
  t.ok(elapsed < 55_000, `all 600 answered within one window (${elapsed} ms)`)
  t.equal(answers.length, 600, '600 answers')
  const ok = answers.filter((x) => x.status === 200)
  const refused = answers.filter((x) => x.status === 429)
  t.equal(ok.length, 60, 'exactly 60 admitted')
  t.equal(refused.length, 540, 'the other 540 refused with 429')
  t.ok(refused.every((x) => x.code === 'LIMIT_RATE_EXCEEDED'), 'every refusal is LIMIT_RATE_EXCEEDED')
  t.ok(refused.every((x) => x.retryAfter !== null && /^\d+$/.test(x.retryAfter)), 'every 429 has Retry-After in seconds')
  // The real wait: the first admissions leave the window 60 s after they were made.
  const bad = refused.filter((x) => {
    const s = Number(x.retryAfter)
    return s < 1 || s > 60 || s < 60 - Math.ceil(x.at / 1000) - 2
  })
  t.same(bad, [], 'Retry-After is the time left until the oldest admission leaves the window')
  t.equal(a.mock.calls.length, 60, 'only the admitted requests reached the upstream')

  // Every key written under the prefix has a TTL.
  const redis = new Redis(TEST_REDIS_URL)
  t.teardown(() => redis.disconnect())
  const keys: string[] = []
  let cursor = '0'
  do {
    const [next, found] = await redis.scan(cursor, 'MATCH', `${channel}:*`, 'COUNT', 1000)
    cursor = next
    keys.push(...found)
  } while (cursor !== '0')
  t.ok(keys.length >= 1, `the limits wrote under the prefix (${keys.join(', ')})`)
  for (const k of keys) {
    const ttl = await redis.pttl(k)
    t.ok(ttl > 0 && ttl <= 60_000, `${k} has a TTL (${ttl} ms)`)
  }
})

t.test('a key policy and an account tier change the limit at request time; a policy above the tier is clamped', async (t) => {
  const tiers = { tiny: { rank: 0, requests_per_minute: 2, concurrent_streams: 1, overdraft: '0' }, small: { rank: 1, requests_per_minute: 4, concurrent_streams: 1, overdraft: '0' } }
  const gw = await startTestGateway({ limits: { default_tier: 'tiny', tiers } })
  t.teardown(() => gw.close())
  const statuses = async (n: number, key: string): Promise<number[]> => {
    const out: number[] = []
    for (let i = 0; i < n; i++) out.push((await chat(gw, key)).status)
    return out
  }
  t.same(await statuses(3, gw.key), [200, 200, 429], 'the account tier tiny: 2 rpm')

  // Keys on an account of tier small (4 rpm for all its keys together).
  const { store } = gw.services
  const account = async (name: string, tier: string): Promise<string> => {
    const acct = await store.accounts.create({ name, tier })
    await store.ledger.credit({ accountId: acct.id, amount: 10_000_000_000n, kind: 'topup', postingId: `seed:${acct.id}` })
    await store.accounts.markToppedUp(acct.id)
    return acct.id
  }
  const key = async (accountId: string, name: string, rateLimitPolicy: string | null): Promise<string> => {
    const k = await store.keys.create({ accountId, name, rateLimitPolicy })
    if (!k.ok) throw new Error('key')
    return k.value.plaintext
  }
  const small = await account('small', 'small')
  const k1 = await key(small, 'bound to tiny', 'tiny')
  const k2 = await key(small, 'bound to small', 'small')
  t.same(await statuses(3, k1), [200, 200, 429], 'key policy tiny under an account of small: the key alone gets 2 rpm')
  t.same(await statuses(3, k2), [200, 200, 429], 'key policy small equal to its tier: the account\'s 4 rpm, 2 of them already used by the other key')

  // An account lowered to tiny: the key's policy small now ranks above it and is clamped.
  const lowered = await account('lowered', 'small')
  const k3 = await key(lowered, 'clamped', 'small')
  await store.accounts.update(lowered, { tier: 'tiny' })
  t.same(await statuses(3, k3), [200, 200, 429], 'policy small above the lowered tier tiny: clamped to 2 rpm')
})

t.test('LIMIT_RATE_EXCEEDED in every envelope, with its status and headers, before the body and not forwarded', async (t) => {
  const gw = await startTestGateway({ limits: { default_tier: 'one', tiers: { one: { rank: 0, requests_per_minute: 1, concurrent_streams: 1, overdraft: '0' } } } })
  t.teardown(() => gw.close())
  const cases: Array<{ family: string, path: string, body: string, headers: Record<string, string> }> = [
    { family: 'chat', path: '/v1/chat/completions', body: CHAT, headers: { authorization: `Bearer ${gw.key}` } },
    { family: 'messages', path: '/v1/messages', body: MESSAGES, headers: { 'x-api-key': gw.key } },
    { family: 'genai', path: '/genai/v1beta/models/genai%2Fgemini-2.5-flash:generateContent', body: GENAI, headers: { 'x-goog-api-key': gw.key } }
  ]
  const first = await fetch(`${gw.url}${cases[0]?.path ?? ''}`, { method: 'POST', headers: { ...cases[0]?.headers, 'content-type': 'application/json' }, body: CHAT })
  t.equal(first.status, 200, 'the first request of the minute is served')
  await first.arrayBuffer()
  const calls = gw.mock.calls.length
  for (const c of cases) {
    const res = await fetch(`${gw.url}${c.path}`, { method: 'POST', headers: { ...c.headers, 'content-type': 'application/json' }, body: c.body })
    const body = await res.json() as Record<string, any>
    t.equal(res.status, 429, `${c.family}: HTTP 429`)
    t.equal(res.headers.get('x-gateway-error-code'), 'LIMIT_RATE_EXCEEDED', `${c.family}: X-Gateway-Error-Code`)
    t.equal(res.headers.get('x-gateway-error-reference'), 'GW-LIMIT-4001', `${c.family}: reference`)
    t.equal(res.headers.get('x-gateway-billed'), 'false', `${c.family}: not billed`)
    const retryAfter = Number(res.headers.get('retry-after'))
    t.ok(retryAfter >= 55 && retryAfter <= 60, `${c.family}: Retry-After is the real wait, about a minute (${retryAfter})`)
    if (c.family === 'chat') {
      t.match(body, { error: { code: 'LIMIT_RATE_EXCEEDED', reference: 'GW-LIMIT-4001', retry: { retryable: true, strategy: 'BACKOFF', retry_after_seconds: retryAfter }, billing: { status: 'NOT_BILLED' } } }, 'chat envelope')
    } else if (c.family === 'messages') {
      t.match(body, { type: 'error', error: { type: 'rate_limit_error', code: 'LIMIT_RATE_EXCEEDED', reference: 'GW-LIMIT-4001', billing: { status: 'NOT_BILLED' } } }, 'messages envelope')
    } else {
      t.match(body, { error: { code: 429, status: 'LIMIT_RATE_EXCEEDED', details: [{ reason: 'LIMIT_RATE_EXCEEDED', metadata: { reference: 'GW-LIMIT-4001', billing_status: 'NOT_BILLED' } }] } }, 'genai envelope')
    }
  }
  t.equal(gw.mock.calls.length, calls, 'no refused request reached the upstream')
  const wallet = await gw.services.store.ledger.wallet(gw.account.id)
  t.equal(wallet.held, 0n, 'nothing held for the refused requests')
})

t.test('a started gateway counts its first request in Redis: it listens only once the limits\' connection is ready', async (t) => {
  // Before, the start did not wait for that connection: the first requests met it in its ready
  // check and, with no offline queue, were counted in this instance alone (a stream leased so
  // went uncounted by the other instances). A proxy in front of Redis holds each new connection
  // for SLOW ms, longer than a start takes, so that window is sure to be open.
  const SLOW = 1500
  const held = new Set<Socket>()
  const proxy = createServer((client) => {
    held.add(client)
    setTimeout(() => {
      const [host, port] = new URL(TEST_REDIS_URL).host.split(':')
      const server = connect(Number(port ?? 6379), host ?? '127.0.0.1')
      held.add(server)
      client.pipe(server).pipe(client)
      server.on('error', () => client.destroy())
      client.on('error', () => server.destroy())
    }, SLOW)
  })
  proxy.listen(0, '127.0.0.1')
  await once(proxy, 'listening')
  t.teardown(() => {
    for (const s of held) s.destroy()
    proxy.close()
  })
  const prefix = `test-first-${randomUUID()}:`
  const started = Date.now()
  const gw = await startTestGateway({ limits: { redis_timeout_ms: 10_000 }, services: { limitsRedisUrl: `redis://127.0.0.1:${(proxy.address() as AddressInfo).port}`, redisPrefix: prefix } })
  t.teardown(() => gw.close())
  t.ok(Date.now() - started >= SLOW, 'the start waited for the slow connection')
  t.equal(gw.services.limitsRedis?.client.status, 'ready', 'the limits\' connection is ready once the gateway is up')
  const res = await chat(gw)
  await res.arrayBuffer()
  t.equal(res.status, 200)
  const redis = new Redis(TEST_REDIS_URL)
  t.teardown(() => redis.disconnect())
  t.equal(await redis.zcard(`${prefix}rpm-account:${gw.account.id}`), 1, 'the first request is in the account\'s shared window')
})

t.test('the admissions of one event-loop turn reach Redis in one write (the limits client pipelines them)', async (t) => {
  const prefix = `test-pipe-${randomUUID()}:`
  // What is counted is writes, not time: a wait for Redis as long as a busy CI machine may need.
  const gw = await startTestGateway({ limits: { redis_timeout_ms: 10_000 }, services: { limitsRedisUrl: TEST_REDIS_URL, redisPrefix: prefix } })
  t.teardown(() => gw.close())
  const redis = gw.services.limitsRedis
  if (redis === undefined) throw new Error('no limits Redis')
  const limiter = new Limiter({ config: { ...BASE, redis_timeout_ms: 10_000 }, clock: systemClock, redis, warn: (err) => { t.fail(`Redis failed: ${String(err)}`) } })
  t.teardown(() => { limiter.close() })
  const limits = compilePolicies(BASE).tier('free').alone
  const socket = (redis.client as unknown as { stream: { write: (...args: unknown[]) => boolean } }).stream
  const write = socket.write
  let writes = 0
  socket.write = function (this: unknown, ...args: unknown[]) { writes++; return write.apply(this, args) }
  t.teardown(() => { socket.write = write })
  const n = 20
  const answers = await Promise.all(Array.from({ length: n }, (_, i) => limiter.admit({ keyId: 'pipe-key', accountId: 'pipe-account' }, `req-${i}`, limits, false)))
  t.equal(answers.length, n, `${n} admissions answered`)
  t.ok(writes >= 1 && writes <= 2, `${n} admissions of one turn went out in ${writes} socket write(s), not ${n}`)
  const counted = await redis.client.zcard(`${prefix}rpm-account:pipe-account`)
  t.equal(counted, n, 'each of them was counted in the account\'s shared window')
})

t.test('Redis unreachable: each instance enforces the limits alone (fail-open to per-instance limits); money unaffected', async (t) => {
  const port = await closedPort()
  const gw = await startTestGateway({
    limits: { default_tier: 'three', tiers: { three: { rank: 0, requests_per_minute: 3, concurrent_streams: 2, overdraft: '0' } }, redis_timeout_ms: 100 },
    services: { limitsRedisUrl: `redis://127.0.0.1:${port}`, redisPrefix: `test-closed-${randomUUID()}:` }
  })
  t.teardown(() => gw.close())
  t.ok(gw.services.limitsRedis !== undefined, 'the gateway was given a Redis for its limits')
  const before = await gw.services.store.ledger.wallet(gw.account.id)
  const statuses: number[] = []
  for (let i = 0; i < 4; i++) {
    const res = await chat(gw)
    await res.arrayBuffer()
    statuses.push(res.status)
  }
  t.same(statuses, [200, 200, 200, 429], 'served while Redis is away; the 4th refused by the in-process window')
  t.equal(gw.mock.calls.length, 3, 'three forwarded')
  const after = await gw.services.store.ledger.wallet(gw.account.id)
  t.ok(after.balance < before.balance, 'the served requests were billed')
  t.equal(after.held, 0n, 'no hold left open')
  const entries = await gw.services.store.ledger.entries(gw.account.id, { limit: 10 })
  t.equal(entries.filter((e) => e.kind === 'charge').length, 3, 'three charges: one per served request, none for the refusal')
})

t.test('limits.enabled false: nothing is counted', async (t) => {
  const gw = await startTestGateway({ limits: { default_tier: 'one', tiers: { one: { rank: 0, requests_per_minute: 1, concurrent_streams: 1, overdraft: '0' } }, enabled: false } })
  t.teardown(() => gw.close())
  const statuses: number[] = []
  for (let i = 0; i < 3; i++) {
    const res = await chat(gw)
    await res.arrayBuffer()
    statuses.push(res.status)
  }
  t.same(statuses, [200, 200, 200], 'a 1 rpm tier does not refuse when limits are off')
})
