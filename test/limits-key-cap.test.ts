// The cap on API keys per account (limits.max_keys_per_account, default 50): keys up to the cap
// are created, the next is refused with LIMIT_API_KEY_COUNT_EXCEEDED, from the store (two store
// instances: two processes' connections), the admin API, the CLI and the console, on both
// stores; 60 concurrent creations at the cap never exceed it; a revoked key makes room.
import { spawn } from 'node:child_process'
import t from 'tap'
import type { Store } from '../plugins/foundation/store/index.js'
import { builtCli } from './helpers/built-cli.js'
import { signedInClient } from './helpers/console.js'
import { startTestGateway, type Backend } from './helpers/gateway.js'
import { TEST_DATABASE_URL, TEST_SECRET, testBackends } from './helpers/store.js'
import { writeTestConfig } from './helpers/test-config.js'

// Concurrent creations over two store instances, CLI processes: slow on a loaded machine.
t.setTimeout(300_000)

const ADMIN_TOKEN = 'key-cap-admin-token-0123456789abcdef'
const BIN = builtCli()

t.test('the shipped default is 50 keys per account', async (t) => {
  const gw = await startTestGateway({ limits: 'config', seed: false })
  t.teardown(() => gw.close())
  t.equal(gw.config.limits.max_keys_per_account, 50)
})

for (const backend of testBackends()) {
  t.test(`store (${backend.name}): the cap counts keys not revoked; 60 concurrent creations over two store instances at a cap of 50 create exactly 50`, async (t) => {
    t.teardown(() => backend.cleanup())
    const a: Store = await backend.open()
    const b: Store = await backend.open()
    const account = await a.accounts.create({ name: 'capped' })
    const cap = { maxKeys: 3 }
    const ids: string[] = []
    for (let i = 0; i < 3; i++) {
      const k = await a.keys.create({ accountId: account.id, name: `k${i}` }, cap)
      t.ok(k.ok, `key ${i + 1} of 3 created`)
      if (k.ok) ids.push(k.value.record.id)
    }
    t.same(await b.keys.create({ accountId: account.id, name: 'k4' }, cap), { ok: false, error: 'key_cap_reached' }, 'the 4th is refused (seen through the other store instance)')
    t.same(await a.keys.importLegacy(account.id, 'gw_live_capcapcapcapcap0123', { name: 'legacy' }, cap), { ok: false, error: 'key_cap_reached' }, 'a legacy import counts against the cap too')
    await a.keys.revoke(ids[0] as string)
    t.equal(await a.keys.countLive(account.id), 2, 'a revoked key is not counted')
    t.ok((await b.keys.create({ accountId: account.id, name: 'k4' }, cap)).ok, 'revoking one made room for one')
    t.same(await a.keys.create({ accountId: account.id, name: 'k5' }, cap), { ok: false, error: 'key_cap_reached' }, 'and only one')
    t.ok((await a.keys.create({ accountId: account.id, name: 'uncapped' })).ok, 'without a cap (the operator\'s own store calls) the store does not count')

    const crowded = await a.accounts.create({ name: 'crowded' })
    const results = await Promise.all(Array.from({ length: 60 }, async (_, i) =>
      await (i % 2 === 0 ? a : b).keys.create({ accountId: crowded.id, name: `c${i}` }, { maxKeys: 50 })))
    t.equal(results.filter((r) => r.ok).length, 50, '60 at once at a cap of 50: exactly 50 created')
    t.ok(results.filter((r) => !r.ok).every((r) => !r.ok && r.error === 'key_cap_reached'), 'the other 10 refused as key_cap_reached')
    t.equal(await b.keys.countLive(crowded.id), 50, 'the account holds 50 keys')
  })
}

for (const backend of ['sqlite', 'pg'] as Backend[]) {
  t.test(`admin API, CLI and console (${backend}): up to the cap, then LIMIT_API_KEY_COUNT_EXCEEDED (409); concurrently too`, async (t) => {
    const cfg = writeTestConfig((c) => { (c.limits as { max_keys_per_account?: number }).max_keys_per_account = 4 })
    t.teardown(cfg.remove)
    const gw = await startTestGateway({ backend, configFile: cfg.file, server: { adminToken: ADMIN_TOKEN } })
    t.teardown(() => gw.close())
    t.equal(gw.config.limits.max_keys_per_account, 4, 'the cap of the test config')
    const admin = async (method: string, path: string, body?: unknown): Promise<Response> =>
      await fetch(`${gw.url}/admin/v1${path}`, { method, headers: { authorization: `Bearer ${ADMIN_TOKEN}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) })

    // Admin API: the seeded account holds one key; three more fit.
    const acct = gw.account.id
    for (let i = 2; i <= 4; i++) {
      const res = await admin('POST', `/accounts/${acct}/keys`, { name: `admin ${i}` })
      t.equal(res.status, 201, `admin API: key ${i} of 4 created`)
      await res.arrayBuffer()
    }
    const refused = await admin('POST', `/accounts/${acct}/keys`, { name: 'one too many' })
    const body = await refused.json() as { error: { code: string, reference: string, message: string, retry: { retryable: boolean } } }
    t.equal(refused.status, 409, 'admin API: the 5th answers 409')
    t.equal(refused.headers.get('x-gateway-error-code'), 'LIMIT_API_KEY_COUNT_EXCEEDED', 'with the code header')
    t.match(body.error, { code: 'LIMIT_API_KEY_COUNT_EXCEEDED', reference: 'GW-LIMIT-4007', retry: { retryable: false } }, 'in the admin envelope, not retryable as is')
    t.match(body.error.message, /at most 4 API keys/, 'the message states the cap')
    const legacy = await admin('POST', `/accounts/${acct}/keys/import-legacy`, { key: 'gw_live_capcapcapcapcap4567', name: 'legacy' })
    t.equal(legacy.headers.get('x-gateway-error-code'), 'LIMIT_API_KEY_COUNT_EXCEEDED', 'admin API: a legacy import is refused too')
    await legacy.arrayBuffer()

    // Concurrently: a fresh account, 12 creations at once at a cap of 4.
    const crowdedRes = await admin('POST', '/accounts', { name: 'crowded' })
    const crowded = (await crowdedRes.json() as { id: string }).id
    const statuses = await Promise.all(Array.from({ length: 12 }, async (_, i) => {
      const res = await admin('POST', `/accounts/${crowded}/keys`, { name: `c${i}` })
      await res.arrayBuffer()
      return res.status
    }))
    t.equal(statuses.filter((s) => s === 201).length, 4, 'admin API: 12 at once → 4 created')
    t.equal(statuses.filter((s) => s === 409).length, 8, 'the other 8 refused with 409')

    // CLI (the built one, another process on the same store): a fresh account.
    const cliEnv = {
      PATH: process.env.PATH ?? '',
      GATEWAY_CONFIG: cfg.file,
      GATEWAY_SECRET: TEST_SECRET,
      ...(backend === 'sqlite' ? { GATEWAY_DATA_DIR: gw.location } : { DATABASE_URL: TEST_DATABASE_URL, DATABASE_SCHEMA: gw.location })
    }
    const cli = async (args: string[]): Promise<{ code: number | null, out: string, err: string }> => await new Promise((resolve, reject) => {
      const child = spawn(process.execPath, [BIN, ...args], { env: cliEnv, stdio: ['ignore', 'pipe', 'pipe'] })
      let out = ''
      let err = ''
      child.stdout.on('data', (d: Buffer) => { out += d.toString() })
      child.stderr.on('data', (d: Buffer) => { err += d.toString() })
      child.on('error', reject)
      child.on('close', (code) => { resolve({ code, out, err }) })
    })
    const viaCli = (await gw.services.store.accounts.create({ name: 'cli' })).id
    for (let i = 0; i < 4; i++) await gw.services.store.keys.create({ accountId: viaCli, name: `pre ${i}` })
    const over = await cli(['keys', 'create', '--account', viaCli, '--name', 'one too many'])
    t.equal(over.code, 1, 'CLI: the 5th key exits 1')
    t.equal(over.out, '', 'CLI: nothing on stdout (no plaintext key)')
    t.match(JSON.parse(over.err), { error: { code: 'LIMIT_API_KEY_COUNT_EXCEEDED', reference: 'GW-LIMIT-4007' } }, 'CLI: the code on stderr')
    const revoke = await cli(['keys', 'revoke', (await gw.services.store.keys.listByAccount(viaCli))[0]?.id ?? ''])
    t.equal(revoke.code, 0, 'CLI: revoking one')
    const again = await cli(['keys', 'create', '--account', viaCli, '--name', 'in its place'])
    t.equal(again.code, 0, 'CLI: then one more is created')
    if (backend === 'sqlite') {
      // Processes racing on one SQLite file: each counts and inserts in its own IMMEDIATE transaction.
      const raced = (await gw.services.store.accounts.create({ name: 'cli race' })).id
      const runs = await Promise.all(Array.from({ length: 8 }, async (_, i) => await cli(['keys', 'create', '--account', raced, '--name', `race ${i}`])))
      t.equal(runs.filter((r) => r.code === 0).length, 4, 'CLI: 8 processes at once at a cap of 4 → 4 created')
      t.ok(runs.filter((r) => r.code !== 0).every((r) => /LIMIT_API_KEY_COUNT_EXCEEDED/.test(r.err)), 'the other 4 refused with the code')
      t.equal(await gw.services.store.keys.countLive(raced), 4, 'the account holds 4 keys')
    }

    // Console: a signed-in account holder creates keys until the cap.
    const c = await signedInClient(gw.url, ADMIN_TOKEN)
    for (let i = 1; i <= 4; i++) {
      const res = await c.call('POST', '/keys', { name: `console ${i}` })
      t.equal(res.status, 201, `console: key ${i} of 4 created`)
      await res.arrayBuffer()
    }
    const consoleOver = await c.call('POST', '/keys', { name: 'one too many' })
    t.equal(consoleOver.status, 409, 'console: the 5th answers 409')
    t.match(await consoleOver.json(), { error: { code: 'LIMIT_API_KEY_COUNT_EXCEEDED' } }, 'console: with the code')
    t.equal(await gw.services.store.keys.countLive(c.accountId), 4, 'console: the account holds 4 keys')
  })
}
