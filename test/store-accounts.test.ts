// AccountStore contract, run against SQLite and PostgreSQL.
import t from 'tap'
import type { InvalidationMessage } from '../plugins/foundation/keys/index.js'
import { ManualClock, testBackends } from './helpers/store.js'

for (const backend of testBackends()) {
  t.test(`accounts (${backend.name})`, async (t) => {
    t.teardown(() => backend.cleanup())
    const clock = new ManualClock('2030-01-01T00:00:00.000Z')
    const store = await backend.open({ clock })
    const published: InvalidationMessage[] = []
    store.bus.subscribe((m) => published.push(m))

    t.test('create fills defaults', async (t) => {
      const a = await store.accounts.create({ name: 'Acme' })
      t.match(a.id, /^acct_[0-9A-Za-z]{22}$/)
      t.same(a, { id: a.id, name: 'Acme', status: 'active', tier: 'free', toppedUp: false, allowedModels: null, createdAt: clock.now() })
      t.same(await store.accounts.get(a.id), a, 'get returns what create returned')
      const b = await store.accounts.create({ name: 'Big', tier: 'enterprise' })
      t.equal(b.tier, 'enterprise')
      t.not(b.id, a.id)
    })

    t.test('get of an unknown id is null', async (t) => {
      t.equal(await store.accounts.get('acct_nope'), null)
    })

    t.test('createdAt keeps millisecond precision', async (t) => {
      clock.advance(1234)
      const a = await store.accounts.create({ name: 'ms' })
      t.equal(a.createdAt.toISOString(), '2030-01-01T00:00:01.234Z')
      t.equal((await store.accounts.get(a.id))?.createdAt.toISOString(), '2030-01-01T00:00:01.234Z')
    })

    t.test('list pages oldest first with an after cursor', async (t) => {
      const all = await store.accounts.list({ limit: 1000 })
      const created = []
      for (let i = 0; i < 5; i++) {
        clock.advance(1000)
        created.push(await store.accounts.create({ name: `page-${i}` }))
      }
      const ids = created.map((a) => a.id)
      const first = await store.accounts.list({ limit: all.length + 2 })
      t.same(first.slice(all.length).map((a) => a.id), ids.slice(0, 2))
      const last = first.at(-1)
      t.ok(last)
      const second = await store.accounts.list({ limit: 2, after: last?.id ?? '' })
      t.same(second.map((a) => a.id), ids.slice(2, 4))
      const rest = await store.accounts.list({ limit: 10, after: ids[3] ?? '' })
      t.same(rest.map((a) => a.id), ids.slice(4))
      t.same(await store.accounts.list({ limit: 10, after: ids[4] ?? '' }), [], 'nothing after the newest')
      t.same(await store.accounts.list({ limit: 10, after: 'acct_unknown' }), [], 'unknown cursor: empty page')
      await t.rejects(store.accounts.list({ limit: 0 }), RangeError)
      await t.rejects(store.accounts.list({ limit: 1001 }), RangeError)
      await t.rejects(store.accounts.list({ limit: 1.5 }), RangeError)
    })

    t.test('list orders same-millisecond accounts by id', async (t) => {
      clock.advance(60_000)
      const made = [
        await store.accounts.create({ name: 'same-1' }),
        await store.accounts.create({ name: 'same-2' }),
        await store.accounts.create({ name: 'same-3' }),
      ]
      const page = await store.accounts.list({ limit: 1000 })
      const tail = page.slice(-3).map((a) => a.id)
      t.same(tail, made.map((a) => a.id).sort())
    })

    t.test('update changes status, tier and name and publishes', async (t) => {
      const a = await store.accounts.create({ name: 'to-suspend' })
      published.length = 0
      const r = await store.accounts.update(a.id, { status: 'suspended' })
      t.same(r, { ok: true, value: { ...a, status: 'suspended' } })
      t.same(published, [{ kind: 'account', id: a.id }])
      const r2 = await store.accounts.update(a.id, { tier: 'standard', name: 'renamed' })
      t.same(r2, { ok: true, value: { ...a, status: 'suspended', tier: 'standard', name: 'renamed' } })
      const r3 = await store.accounts.update(a.id, { status: 'active' })
      t.equal(r3.ok && r3.value.status, 'active')
      t.equal((await store.accounts.get(a.id))?.name, 'renamed')
    })

    t.test('update of an unknown account is not_found and publishes nothing', async (t) => {
      published.length = 0
      t.same(await store.accounts.update('acct_nope', { status: 'suspended' }), { ok: false, error: 'not_found' })
      t.same(published, [])
    })

    t.test('markToppedUp is idempotent and publishes once', async (t) => {
      const a = await store.accounts.create({ name: 'wallet' })
      published.length = 0
      const r = await store.accounts.markToppedUp(a.id)
      t.same(r, { ok: true, value: { ...a, toppedUp: true } })
      t.same(await store.accounts.markToppedUp(a.id), { ok: true, value: { ...a, toppedUp: true } })
      t.same(published, [{ kind: 'account', id: a.id }])
      t.equal((await store.accounts.get(a.id))?.toppedUp, true)
      t.same(await store.accounts.markToppedUp('acct_nope'), { ok: false, error: 'not_found' })
    })

    t.test('the database refuses an unknown status', async (t) => {
      const a = await store.accounts.create({ name: 'bad' })
      // Cast: simulates a caller that skipped validation.
      const patch = { status: 'deleted' } as unknown as { status: 'active' }
      await t.rejects(store.accounts.update(a.id, patch))
    })
  })
}
