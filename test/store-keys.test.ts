// KeyStore contract, run against SQLite and PostgreSQL.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { KeySealError, hasValidChecksum, lookupHash } from '../plugins/foundation/keys/index.js'
import type { InvalidationMessage } from '../plugins/foundation/keys/index.js'
import { openStore } from '../plugins/foundation/store/index.js'
import type { Store } from '../plugins/foundation/store/index.js'
import { ManualClock, TEST_SECRET, testBackends } from './helpers/store.js'

const LEGACY = 'gw_live_9f8e7d6c5b4a3f2e1d0c9b8a'

async function newAccount (store: Store): Promise<string> {
  return (await store.accounts.create({ name: 'owner' })).id
}

async function newKey (store: Store, accountId: string, name = 'k') {
  const r = await store.keys.create({ accountId, name })
  if (!r.ok) throw new Error(r.error)
  return r.value
}

/** Copies one row's sealed key onto another, as a database-level attacker could. */
async function copySealed (store: Store, fromId: string, toId: string): Promise<void> {
  if (store.backend.kind === 'sqlite') {
    store.backend.db
      .prepare('UPDATE api_keys SET sealed_key = (SELECT sealed_key FROM api_keys WHERE id = ?) WHERE id = ?')
      .run(fromId, toId)
  } else {
    await store.backend.pool.query(
      'UPDATE api_keys SET sealed_key = (SELECT sealed_key FROM api_keys WHERE id = $1) WHERE id = $2',
      [fromId, toId]
    )
  }
}

for (const backend of testBackends()) {
  t.test(`keys (${backend.name})`, async (t) => {
    t.teardown(() => backend.cleanup())
    const clock = new ManualClock('2030-01-01T00:00:00.000Z')
    const store = await backend.open({ clock })
    const published: InvalidationMessage[] = []
    store.bus.subscribe((m) => published.push(m))
    const accountId = await newAccount(store)

    t.test('create returns the plaintext once and stores defaults', async (t) => {
      const { record, plaintext } = await newKey(store, accountId, 'ci')
      t.ok(hasValidChecksum(plaintext))
      t.match(plaintext, /^sk-/)
      t.match(record.id, /^key_[0-9A-Za-z]{22}$/)
      t.same(record, {
        id: record.id,
        accountId,
        name: 'ci',
        prefix: plaintext.slice(0, 8),
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
        createdAt: clock.now(),
      })
      t.same(await store.keys.get(record.id), record)
    })

    t.test('every field round-trips, money exactly beyond 2^53', async (t) => {
      const big = 9_007_199_254_740_993n
      const r = await store.keys.create({
        accountId,
        name: 'full',
        allowedModels: ['openai/gpt-4o', 'anthropic/claude'],
        expiresAt: new Date('2031-06-30T12:34:56.789Z'),
        active: false,
        timezone: 'Europe/Paris',
        quota: big,
        dailySpendCap: 0n,
        monthlySpendCap: 9_223_372_036_854_775_807n,
        dailyImageCap: 50,
        tags: ['team:ml', 'env.prod'],
        rateLimitPolicy: 'standard',
      })
      t.ok(r.ok)
      if (!r.ok) return
      const got = await store.keys.get(r.value.record.id)
      t.same(got, r.value.record)
      t.equal(got?.quota, big)
      t.equal(got?.monthlySpendCap, 9_223_372_036_854_775_807n)
      t.equal(got?.dailySpendCap, 0n)
      t.equal(got?.expiresAt?.toISOString(), '2031-06-30T12:34:56.789Z')
      t.same(got?.allowedModels, ['openai/gpt-4o', 'anthropic/claude'])
    })

    t.test('create for an unknown account', async (t) => {
      t.same(await store.keys.create({ accountId: 'acct_nope', name: 'x' }), { ok: false, error: 'account_not_found' })
    })

    t.test('lookup by hash', async (t) => {
      const { record, plaintext } = await newKey(store, accountId)
      t.same(await store.keys.findByLookupHash(lookupHash(TEST_SECRET, plaintext)), record)
      t.equal(await store.keys.findByLookupHash(lookupHash(TEST_SECRET, plaintext + 'x')), null)
      t.equal(await store.keys.findByLookupHash('not-hex'), null)
      t.equal(await store.keys.findByLookupHash(''), null)
    })

    t.test('listByAccount: oldest first, only that account', async (t) => {
      const owner = await newAccount(store)
      const other = await newAccount(store)
      const a = await newKey(store, owner, 'a')
      clock.advance(1)
      const b = await newKey(store, owner, 'b')
      await newKey(store, other, 'c')
      t.same((await store.keys.listByAccount(owner)).map((k) => k.id), [a.record.id, b.record.id])
      t.same(await store.keys.listByAccount('acct_nope'), [])
    })

    t.test('update patches fields, clears nullable ones and publishes', async (t) => {
      const { record } = await newKey(store, accountId)
      published.length = 0
      const r = await store.keys.update(record.id, { name: 'renamed', quota: 100n, tags: ['x'], active: false })
      t.same(r, { ok: true, value: { ...record, name: 'renamed', quota: 100n, tags: ['x'], active: false } })
      t.same(published, [{ kind: 'key', id: record.id }])
      const cleared = await store.keys.update(record.id, { quota: null, allowedModels: null, expiresAt: null })
      t.equal(cleared.ok && cleared.value.quota, null)
      const same = await store.keys.update(record.id, {})
      t.same(same, { ok: true, value: { ...record, name: 'renamed', tags: ['x'], active: false } }, 'empty patch')
      t.same(await store.keys.update('key_nope', { name: 'x' }), { ok: false, error: 'not_found' })
      t.same(await store.keys.update('key_nope', {}), { ok: false, error: 'not_found' })
    })

    t.test('revoke is final', async (t) => {
      const { record, plaintext } = await newKey(store, accountId)
      clock.advance(5000)
      const revokedAt = clock.now()
      published.length = 0
      t.same(await store.keys.revoke(record.id), { ok: true, value: { ...record, revokedAt } })
      t.same(published, [{ kind: 'key', id: record.id }])
      clock.advance(5000)
      const again = await store.keys.revoke(record.id)
      t.same(again.ok && again.value.revokedAt, revokedAt, 'second revoke keeps the first time')
      t.same(await store.keys.update(record.id, { active: true }), { ok: false, error: 'revoked' })
      t.same(await store.keys.update(record.id, {}), { ok: false, error: 'revoked' })
      t.same(await store.keys.reveal(record.id), { ok: false, error: 'revoked' })
      const found = await store.keys.findByLookupHash(lookupHash(TEST_SECRET, plaintext))
      t.same(found?.revokedAt, revokedAt, 'still found, so auth can answer invalid key')
      t.same(await store.keys.revoke('key_nope'), { ok: false, error: 'not_found' })
    })

    t.test('revoke wipes the sealed plaintext', async (t) => {
      const { record } = await newKey(store, accountId)
      await store.keys.revoke(record.id)
      const sealed =
        store.backend.kind === 'sqlite'
          ? store.backend.db.prepare<[string], { s: string | null }>('SELECT sealed_key AS s FROM api_keys WHERE id = ?').get(record.id)?.s
          : (await store.backend.pool.query<{ s: string | null }>('SELECT sealed_key AS s FROM api_keys WHERE id = $1', [record.id])).rows[0]?.s
      t.equal(sealed, null)
    })

    t.test('reveal returns the plaintext without rotating', async (t) => {
      const { record, plaintext } = await newKey(store, accountId)
      t.same(await store.keys.reveal(record.id), { ok: true, value: plaintext })
      t.same(await store.keys.reveal(record.id), { ok: true, value: plaintext })
      t.same(await store.keys.reveal('key_nope'), { ok: false, error: 'not_found' })
    })

    t.test('a sealed key copied onto another row does not open there', async (t) => {
      const a = await newKey(store, accountId)
      const b = await newKey(store, accountId)
      await copySealed(store, a.record.id, b.record.id)
      await t.rejects(store.keys.reveal(b.record.id), KeySealError)
    })

    t.test('a store with another secret cannot reveal', async (t) => {
      const { record } = await newKey(store, accountId)
      const other = await backend.open({ clock, secret: TEST_SECRET.replace('test', 'TEST') })
      await t.rejects(other.keys.reveal(record.id), KeySealError)
    })

    t.test('legacy keys: hash-only, found by lookup, not revealable', async (t) => {
      const r = await store.keys.importLegacy(accountId, LEGACY, { name: 'old', tags: ['legacy'] })
      t.ok(r.ok)
      if (!r.ok) return
      t.match(r.value, { accountId, name: 'old', prefix: 'gw_live_', legacy: true, tags: ['legacy'], active: true })
      t.same(await store.keys.findByLookupHash(lookupHash(TEST_SECRET, LEGACY)), r.value)
      t.same(await store.keys.reveal(r.value.id), { ok: false, error: 'not_revealable' })
      t.same(await store.keys.importLegacy(accountId, LEGACY, { name: 'again' }), { ok: false, error: 'duplicate' })
      t.same(await store.keys.importLegacy(accountId, 'sk-nope', { name: 'x' }), { ok: false, error: 'invalid_key' })
      t.same(await store.keys.importLegacy('acct_nope', 'gw_live_other', { name: 'x' }), {
        ok: false,
        error: 'account_not_found',
      })
      const u = await store.keys.update(r.value.id, { name: 'old-renamed' })
      t.equal(u.ok && u.value.name, 'old-renamed', 'legacy keys can still be updated')
    })

    t.test('the database refuses negative money', async (t) => {
      const { record } = await newKey(store, accountId)
      await t.rejects(store.keys.update(record.id, { quota: -1n }))
    })
  })
}

t.test('embedded mode without a secret: gateway.secret keeps keys working across restarts', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'gw-keys-'))
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }))
  const first = await openStore({ dataDir })
  t.equal(first.secretGenerated, true, 'caller can warn that the secret is auto-managed')
  const accountId = await newAccount(first)
  const { record, plaintext } = await newKey(first, accountId)
  await first.close()
  const second = await openStore({ dataDir })
  t.teardown(() => second.close())
  const secret = readFileSync(join(dataDir, 'gateway.secret'), 'utf8').trim()
  t.same(await second.keys.findByLookupHash(lookupHash(secret, plaintext)), record)
  t.same(await second.keys.reveal(record.id), { ok: true, value: plaintext })
})
