// KeyCache + invalidation buses: one contract for the in-process and Redis buses,
// store mutations reaching the cache, and the cross-instance window over Redis.
import { randomUUID } from 'node:crypto'
import { performance } from 'node:perf_hooks'
import { Redis } from 'ioredis'
import t from 'tap'
import { KeyCache, type CachedKey } from '../plugins/concerns/auth/index.js'
import {
  LocalInvalidationBus,
  RedisInvalidationBus,
  lookupHash,
  parseInvalidationMessage,
} from '../plugins/foundation/keys/index.js'
import type { InvalidationBus } from '../plugins/foundation/keys/index.js'
import type { Account, ApiKeyRecord, Store } from '../plugins/foundation/store/index.js'
import { ManualClock, TEST_SECRET, pgTestBackend, sqliteTestBackend } from './helpers/store.js'

const REDIS_URL = process.env['TEST_REDIS_URL'] ?? 'redis://127.0.0.1:6379'
const CHANNEL = `gateway-test-invalidation-${randomUUID()}`

function entry (keyId: string, accountId: string): CachedKey {
  const now = new Date('2030-01-01T00:00:00Z')
  const account: Account = { id: accountId, name: 'a', status: 'active', tier: 'free', toppedUp: false, allowedModels: null, createdAt: now }
  const key: ApiKeyRecord = {
    id: keyId,
    accountId,
    name: 'k',
    prefix: 'sk-abcde',
    allowedModels: null,
    expiresAt: null,
    active: true,
    revokedAt: null,
    timezone: 'UTC',
    quota: null,
    dailySpendCap: null,
    monthlySpendCap: null,
    dailyImageCap: null,
    tags: [],
    rateLimitPolicy: null,
    legacy: false,
    createdAt: now,
  }
  return { key, account }
}

/** Rejects instead of hanging the file until the tap timeout. */
function within<T> (promise: Promise<T>, ms: number, what: string): Promise<T> {
  return Promise.race([
    promise,
    new Promise<never>((_resolve, reject) => setTimeout(() => reject(new Error(`${what}: no answer in ${ms} ms`)), ms).unref()),
  ])
}

/** Loads what auth would cache for a plaintext key. */
async function loadFrom (store: Store, hash: string): Promise<CachedKey | null> {
  const key = await store.keys.findByLookupHash(hash)
  const account = key && (await store.accounts.get(key.accountId))
  return key && account ? { key, account } : null
}

const buses: Array<[string, () => InvalidationBus]> = [
  ['local', () => new LocalInvalidationBus()],
  ['redis', () => new RedisInvalidationBus(REDIS_URL, CHANNEL)],
]

for (const [name, makeBus] of buses) {
  t.test(`cache invalidation contract (${name} bus)`, async (t) => {
    const bus = makeBus()
    t.teardown(() => bus.close())
    await bus.ready()
    const cache = new KeyCache({ bus })
    t.teardown(() => cache.close())
    cache.set('h1', entry('key_1', 'acct_A'))
    cache.set('h2', entry('key_2', 'acct_A'))
    cache.set('h3', entry('key_3', 'acct_B'))

    await bus.publish({ kind: 'key', id: 'key_1' })
    t.equal(cache.get('h1'), undefined, 'key message drops that key at once')
    t.ok(cache.get('h2'))
    await bus.publish({ kind: 'key', id: 'key_unknown' })
    t.equal(cache.size, 2, 'unknown ids are ignored')
    await bus.publish({ kind: 'account', id: 'acct_A' })
    t.equal(cache.get('h2'), undefined, 'account message drops its keys')
    t.ok(cache.get('h3'), 'other accounts stay')
    await bus.publish({ kind: 'all' })
    t.equal(cache.size, 0, 'all drops everything')

    cache.close()
    cache.set('h4', entry('key_4', 'acct_C'))
    await bus.publish({ kind: 'key', id: 'key_4' })
    t.ok(cache.get('h4'), 'a closed cache no longer listens')
  })
}

t.test('after a lost Redis subscription the cache is flushed', async (t) => {
  const channel = `${CHANNEL}-reconnect`
  const bus = new RedisInvalidationBus(REDIS_URL, channel)
  const admin = new Redis(REDIS_URL)
  t.teardown(async () => {
    await bus.close()
    await admin.quit()
  })
  await bus.ready()
  const cache = new KeyCache({ bus })
  t.teardown(() => cache.close())
  cache.set('h1', entry('key_1', 'acct_A'))
  const flushed = new Promise<void>((resolve) => bus.subscribe((m) => m.kind === 'all' && resolve()))
  // Kill only our own subscriber connection: other test files may share this Redis.
  const list = String(await admin.client('LIST'))
  const line = list.split('\n').find((l) => l.includes(`name=gateway-invalidation:${channel}:sub `))
  const id = /\bid=(\d+)/.exec(line ?? '')?.[1]
  t.ok(id, 'found the subscriber connection by name')
  await admin.client('KILL', 'ID', id ?? '0')
  await within(flushed, 5000, 'flush after reconnect')
  t.equal(cache.size, 0, 'everything dropped once the subscription is back')
  const other = new RedisInvalidationBus(REDIS_URL, channel)
  t.teardown(() => other.close())
  await other.ready()
  cache.set('h2', entry('key_2', 'acct_B'))
  const seen = new Promise<void>((resolve) => bus.subscribe((m) => m.kind === 'key' && resolve()))
  await other.publish({ kind: 'key', id: 'key_2' })
  await within(seen, 2000, 'message after reconnect')
  t.equal(cache.get('h2'), undefined, 'messages flow again after the reconnect')
})

t.test('TTL follows the injected clock', async (t) => {
  const clock = new ManualClock()
  const cache = new KeyCache({ clock, ttlMs: 30_000 })
  cache.set('h', entry('key_1', 'acct_A'))
  clock.advance(29_999)
  t.ok(cache.get('h'), 'fresh before the TTL')
  clock.advance(2)
  t.equal(cache.get('h'), undefined, 'gone after the TTL')
})

t.test('LRU eviction keeps the reverse indexes consistent', async (t) => {
  const cache = new KeyCache({ max: 2 })
  cache.set('h1', entry('key_1', 'acct_A'))
  cache.set('h2', entry('key_2', 'acct_A'))
  cache.set('h3', entry('key_3', 'acct_A'))
  t.equal(cache.get('h1'), undefined, 'least recently used evicted')
  cache.set('h1', entry('key_1', 'acct_B'))
  cache.invalidateAccount('acct_A')
  t.same([cache.get('h1')?.account.id, cache.get('h2'), cache.get('h3')], ['acct_B', undefined, undefined])
  cache.invalidateKey('key_1')
  t.equal(cache.size, 0)
})

t.test('getOrLoad caches hits, not misses, and not loads raced by an invalidation', async (t) => {
  const cache = new KeyCache()
  let loads = 0
  const load = async () => {
    loads++
    return entry('key_1', 'acct_A')
  }
  await cache.getOrLoad('h', load)
  await cache.getOrLoad('h', load)
  t.equal(loads, 1, 'second call served from the cache')
  t.equal(await cache.getOrLoad('missing', async () => null), null)
  t.equal(cache.get('missing'), undefined, 'misses are not cached')

  cache.clear()
  const raced = await cache.getOrLoad('h', async () => {
    cache.invalidateKey('key_1') // a revoke lands while we read the old row
    return entry('key_1', 'acct_A')
  })
  t.ok(raced, 'the caller still gets its answer')
  t.equal(cache.get('h'), undefined, 'but it is not cached')
})

t.test('untrusted bus payloads are narrowed', async (t) => {
  t.same(parseInvalidationMessage({ kind: 'key', id: 'key_1', origin: 'x' }), { kind: 'key', id: 'key_1' })
  t.same(parseInvalidationMessage({ kind: 'all' }), { kind: 'all' })
  for (const bad of [null, 'key', { kind: 'key' }, { kind: 'key', id: '' }, { kind: 'drop', id: 'x' }]) {
    t.equal(parseInvalidationMessage(bad), null)
  }
})

t.test('store mutations invalidate the cache (SQLite, in-process bus)', async (t) => {
  const backend = sqliteTestBackend()
  t.teardown(() => backend.cleanup())
  const store = await backend.open()
  const cache = new KeyCache({ bus: store.bus })
  t.teardown(() => cache.close())
  const account = await store.accounts.create({ name: 'a' })
  const created = await store.keys.create({ accountId: account.id, name: 'k' })
  if (!created.ok) throw new Error(created.error)
  const hash = lookupHash(TEST_SECRET, created.value.plaintext)

  t.ok(await cache.getOrLoad(hash, (h) => loadFrom(store, h)))
  await store.keys.update(created.value.record.id, { active: false })
  t.equal(cache.get(hash), undefined, 'key update')
  t.equal((await cache.getOrLoad(hash, (h) => loadFrom(store, h)))?.key.active, false, 'reloaded fresh')

  await store.accounts.update(account.id, { status: 'suspended' })
  t.equal(cache.get(hash), undefined, 'account suspend')
  t.equal((await cache.getOrLoad(hash, (h) => loadFrom(store, h)))?.account.status, 'suspended')

  await store.keys.revoke(created.value.record.id)
  t.equal(cache.get(hash), undefined, 'revoke')
})

t.test('a failed publish does not fail the committed write', async (t) => {
  const backend = sqliteTestBackend()
  t.teardown(() => backend.cleanup())
  const failing: InvalidationBus = {
    ready: async () => {},
    publish: async () => Promise.reject(new Error('redis is away')),
    subscribe: () => () => {},
    close: async () => {},
  }
  const errors: string[] = []
  const store = await backend.open({ bus: failing, onInvalidationError: (err) => errors.push(err.message) })
  const account = await store.accounts.create({ name: 'a' })
  const created = await store.keys.create({ accountId: account.id, name: 'k' })
  if (!created.ok) throw new Error(created.error)
  t.same(errors, ['redis is away'], 'create committed; its failed publish (clearing negative entries) is reported')
  const revoked = await store.keys.revoke(created.value.record.id)
  t.ok(revoked.ok && revoked.value.revokedAt, 'revoke committed')
  t.same(errors, ['redis is away', 'redis is away'], 'the revoke\'s failure is reported')
})

t.test('revoke on instance A drops the entry on instance B (PostgreSQL + Redis)', async (t) => {
  const backend = pgTestBackend()
  const busA = new RedisInvalidationBus(REDIS_URL, CHANNEL)
  const busB = new RedisInvalidationBus(REDIS_URL, CHANNEL)
  t.teardown(async () => {
    await backend.cleanup()
    await Promise.all([busA.close(), busB.close()])
  })
  await Promise.all([busA.ready(), busB.ready()])
  const storeA = await backend.open({ bus: busA })
  const storeB = await backend.open({ bus: busB })
  const cacheA = new KeyCache({ bus: busA })
  const cacheB = new KeyCache({ bus: busB })
  t.teardown(() => {
    cacheA.close()
    cacheB.close()
  })

  const account = await storeA.accounts.create({ name: 'a' })
  const windows: number[] = []
  for (let i = 0; i < 5; i++) {
    const created = await storeA.keys.create({ accountId: account.id, name: `k${i}` })
    if (!created.ok) throw new Error(created.error)
    const id = created.value.record.id
    const hash = lookupHash(TEST_SECRET, created.value.plaintext)
    t.ok(await cacheA.getOrLoad(hash, (h) => loadFrom(storeA, h)))
    t.ok(await cacheB.getOrLoad(hash, (h) => loadFrom(storeB, h)), 'B has the key cached')

    const arrived = new Promise<number>((resolve) => {
      const off = busB.subscribe((m) => {
        if (m.kind === 'key' && m.id === id) {
          off()
          resolve(performance.now())
        }
      })
    })
    const start = performance.now()
    await storeA.keys.revoke(id)
    t.equal(cacheA.get(hash), undefined, 'A drops it before revoke returns')
    const timeout = new Promise<number>((resolve) => setTimeout(() => resolve(Infinity), 1000).unref())
    const at = await Promise.race([arrived, timeout])
    t.equal(cacheB.get(hash), undefined, 'B dropped it')
    t.ok(at - start < 1000, 'within 1 s')
    windows.push(at - start)
    const reloaded = await cacheB.getOrLoad(hash, (h) => loadFrom(storeB, h))
    t.ok(reloaded?.key.revokedAt, 'B now sees the key revoked')
  }
  const fmt = (ms: number) => `${ms.toFixed(2)} ms`
  t.comment(
    'cross-instance invalidation window (revoke call on A → cache drop on B), 5 runs: ' +
      `${windows.map(fmt).join(', ')}; max ${fmt(Math.max(...windows))}`
  )
})
