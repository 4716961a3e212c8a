// No plaintext key is ever stored: dump every table (and, for SQLite, the raw
// database and WAL files) after a full key life cycle and search for each key.
import { readFileSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { dumpAllTables, testBackends } from './helpers/store.js'

const LEGACY = 'gw_live_legacy0123456789abcdefABCDEF'

const json = (value: unknown): string =>
  JSON.stringify(value, (_, v: unknown) => (typeof v === 'bigint' ? v.toString() : v))

for (const backend of testBackends()) {
  t.test(`no plaintext key in any table (${backend.name})`, async (t) => {
    t.teardown(() => backend.cleanup())
    const store = await backend.open()
    const account = await store.accounts.create({ name: 'acme' })
    const plaintexts: string[] = [LEGACY]
    for (let i = 0; i < 5; i++) {
      const r = await store.keys.create({ accountId: account.id, name: `key ${i}`, tags: ['t'], quota: 10n })
      if (!r.ok) throw new Error(r.error)
      plaintexts.push(r.value.plaintext)
      const revealed = await store.keys.reveal(r.value.record.id)
      t.same(revealed, { ok: true, value: r.value.plaintext }, 'revealable, so it is stored in some form')
      if (i % 2 === 0) await store.keys.update(r.value.record.id, { name: `renamed ${i}` })
      if (i === 4) await store.keys.revoke(r.value.record.id)
    }
    t.ok((await store.keys.importLegacy(account.id, LEGACY, { name: 'old' })).ok)

    const tables = await dumpAllTables(store)
    t.ok(Object.keys(tables).includes('api_keys') && Object.keys(tables).includes('accounts'))
    t.equal(tables['api_keys']?.length, 6, 'all keys dumped')
    const dump = json(tables)
    for (const key of plaintexts) {
      // The secret part alone, too: the first 8 characters are the stored display prefix.
      t.notOk(dump.includes(key), `${key.slice(0, 8)}… not in the table dump`)
      t.notOk(dump.includes(key.slice(8)), `${key.slice(0, 8)}… secret part not in the table dump`)
    }

    if (store.backend.kind === 'sqlite') {
      store.backend.db.pragma('wal_checkpoint(PASSIVE)')
      const dir = backend.location
      const files = readdirSync(dir).filter((f) => f.startsWith('gateway.db'))
      t.ok(files.includes('gateway.db'))
      for (const file of files) {
        const raw = readFileSync(join(dir, file)).toString('latin1')
        for (const key of plaintexts) t.notOk(raw.includes(key.slice(8)), `${key.slice(0, 8)}… not in ${file}`)
      }
    }
  })
}
