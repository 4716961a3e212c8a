// Hostile client, minted keys: a well-formed `sk-` key's checksum is computable offline, so a
// client can send any number of keys that pass the format check. Each unknown key costs at most
// one store lookup per TTL (the negative cache); creating a key clears the negative entries on
// every instance at once, so a key that was tried before it existed works on its first request.
// Against running gateways and the mock upstream, on both stores (two instances over Redis).
import { randomUUID } from 'node:crypto'
import t from 'tap'
import { generateKey } from '../../plugins/foundation/keys/key-format.js'
import { ManualClock } from '../helpers/store.js'
import type { KeyStore } from '../../plugins/foundation/store/types.js'
import { startTestGateway, type Backend, type TestGateway } from '../helpers/gateway.js'

const MINTED = 1000
const CONCURRENCY = 25

/** Counts store lookups by key hash: the store is not under test, the cache in front of it is. */
function countLookups (keys: KeyStore): { readonly count: number, reset: () => void } {
  const original = keys.findByLookupHash.bind(keys)
  let count = 0
  keys.findByLookupHash = async (hash) => {
    count++
    return await original(hash)
  }
  return { get count () { return count }, reset: () => { count = 0 } }
}

async function chat (gw: TestGateway, key: string): Promise<number> {
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] })
  })
  await res.arrayBuffer()
  return res.status
}

/** Sends every key once, CONCURRENCY at a time; returns the statuses. */
async function sendAll (gw: TestGateway, keys: readonly string[]): Promise<number[]> {
  const statuses: number[] = []
  for (let i = 0; i < keys.length; i += CONCURRENCY) {
    statuses.push(...await Promise.all(keys.slice(i, i + CONCURRENCY).map(async (k) => await chat(gw, k))))
  }
  return statuses
}

for (const backend of ['sqlite', 'pg'] as Backend[]) {
  t.test(`${MINTED} minted keys on ${backend}`, async (t) => {
    // Time stands still: every negative entry stays within its TTL for the whole test.
    const clock = new ManualClock()
    const gw = await startTestGateway({ backend, services: { clock } })
    t.teardown(() => gw.close())
    // The seeded key was created after the instance started: its store revision (read every
    // 500 ms) would clear the negative entries mid-pass, as any key created anywhere does. Read it now.
    await gw.services.keyChanges?.poll()
    const lookups = countLookups(gw.services.store.keys)
    const minted = Array.from({ length: MINTED }, () => generateKey())

    const first = await sendAll(gw, minted)
    t.ok(first.every((s) => s === 401), 'every minted key is refused')
    t.ok(lookups.count <= MINTED, `first pass: ${lookups.count} lookups for ${MINTED} keys (at most one each)`)
    t.ok(lookups.count > 0, 'the first pass did look them up')
    t.equal(gw.services.keyCache.unknownSize, MINTED, 'each is remembered as unknown')

    lookups.reset()
    const second = await sendAll(gw, minted)
    t.ok(second.every((s) => s === 401), 'still refused')
    t.equal(lookups.count, 0, 'second pass within the TTL: no lookup at all')

    clock.advance(gw.config.auth.unknown_key_ttl_ms + 1)
    lookups.reset()
    t.equal(await chat(gw, minted[0] as string), 401)
    t.equal(lookups.count, 1, 'after the TTL a key is looked up again')
    t.equal(gw.mock.calls.length, 0, 'nothing reached the provider')
  })
}

t.test('creating a key clears a negative entry on every instance (pg + Redis)', async (t) => {
  const channel = `gateway-hostile-${randomUUID()}`
  const clock = new ManualClock()
  const a = await startTestGateway({ backend: 'pg', redisChannel: channel, services: { clock } })
  t.teardown(() => a.close())
  const b = await startTestGateway({ backend: 'pg', redisChannel: channel, location: a.location, mock: a.mock, seed: false, services: { clock } })
  t.teardown(() => b.close())
  const lookupsB = countLookups(b.services.store.keys)

  // A legacy key is the one kind whose plaintext the operator chooses (import), so it can be
  // tried on instance B before it exists.
  const legacy = `gw_live_${randomUUID().replace(/-/g, '')}`
  t.equal(await chat(b, legacy), 401, 'B: unknown')
  t.equal(await chat(b, legacy), 401, 'B: still unknown')
  t.equal(lookupsB.count, 1, 'B looked it up once and remembers the miss')

  const imported = await a.services.store.keys.importLegacy(a.account.id, legacy, { name: 'imported' })
  t.ok(imported.ok, 'A imports the key (the store publishes on Redis)')

  // Delivery over Redis is asynchronous: a bounded number of tries, no timing assertion. The
  // clock stands still, so without the invalidation B's negative entry would never expire.
  let status = 0
  for (let i = 0; i < 50 && status !== 200; i++) {
    status = await chat(b, legacy)
    if (status !== 200) await new Promise((resolve) => setTimeout(resolve, 20))
  }
  t.equal(status, 200, 'B accepts the key without waiting for the TTL')
  t.equal(b.services.keyCache.unknownSize, 0, 'B forgot its negative entries')
})
