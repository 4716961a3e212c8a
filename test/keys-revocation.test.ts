// Revocation everywhere within a second, without Redis: the store's revision of keys and
// accounts (migration 016) read by each instance twice a second. A key revoked or an account
// suspended by the CLI (another process on the same embedded database) or by another instance
// on PostgreSQL without Redis is refused by the running gateway within 1 s (it used to take up
// to the key cache's 30 s lifetime).
import { spawn } from 'node:child_process'
import t from 'tap'
import { createKeyChangeFeed } from '../plugins/foundation/store/key-changes.js'
import type { Store } from '../plugins/foundation/store/index.js'
import { builtCli } from './helpers/built-cli.js'
import { REPO_CONFIG, startTestGateway, type TestGateway } from './helpers/gateway.js'
import { TEST_DATABASE_URL, TEST_SECRET, testBackends } from './helpers/store.js'

// CLI processes and several gateways: slow on a loaded machine.
t.setTimeout(300_000)

const BIN = builtCli()
const CHAT = JSON.stringify({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] })

async function status (gw: TestGateway, key: string): Promise<number> {
  const res = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: CHAT })
  await res.arrayBuffer()
  return res.status
}

/** Sends a request every 50 ms until one answers `expected`: the time that took, from `since` (ms epoch). */
async function refusedAfter (gw: TestGateway, key: string, expected: number, since: number, giveUpMs = 5000): Promise<number> {
  for (;;) {
    if (await status(gw, key) === expected) return Date.now() - since
    if (Date.now() - since > giveUpMs) return Number.POSITIVE_INFINITY
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

/** `printedAt`: when its answer arrived on stdout, printed once the change committed (before the CLI closes its store and exits). */
interface CliRun { code: number | null, out: string, err: string, printedAt: number }

async function cli (args: string[], env: Record<string, string>): Promise<CliRun> {
  return await new Promise((resolve, reject) => {
    // No REDIS_URL: nothing is published; the running gateway must find the change in the store.
    const child = spawn(process.execPath, [BIN, ...args], { env: { PATH: process.env.PATH ?? '', GATEWAY_CONFIG: REPO_CONFIG, GATEWAY_SECRET: TEST_SECRET, ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    let err = ''
    let printedAt = 0
    child.stdout.on('data', (d: Buffer) => {
      if (printedAt === 0) printedAt = Date.now()
      out += d.toString()
    })
    child.stderr.on('data', (d: Buffer) => { err += d.toString() })
    child.on('error', reject)
    child.on('close', (code) => { resolve({ code, out, err, printedAt }) })
  })
}

for (const backend of testBackends()) {
  t.test(`change feed (${backend.name}): what another connection wrote, and nothing when nothing was`, async (t) => {
    t.teardown(() => backend.cleanup())
    const reader: Store = await backend.open()
    const writer: Store = await backend.open()
    const feed = createKeyChangeFeed(reader.backend)
    const account = await writer.accounts.create({ name: 'watched' })
    const key = await writer.keys.create({ accountId: account.id, name: 'k' })
    if (!key.ok) throw new Error(key.error)
    const start = await feed.revision()
    t.equal(await feed.since(start), null, 'nothing changed since the current revision')
    await writer.keys.revoke(key.value.record.id)
    const revoked = await feed.since(start)
    t.match(revoked, { all: false, keys: [key.value.record.id], accounts: [] }, 'a revoke by another connection: that key')
    t.ok(revoked !== null && revoked.revision > start, 'and a newer revision')
    t.equal(await feed.since(revoked?.revision ?? 0n), null, 'then nothing again')
    await writer.accounts.update(account.id, { status: 'suspended' })
    const suspended = await feed.since(revoked?.revision ?? 0n)
    t.match(suspended, { all: false, keys: [], accounts: [account.id] }, 'a suspension: that account')
    const created = await writer.keys.create({ accountId: account.id, name: 'new' })
    if (!created.ok) throw new Error(created.error)
    t.match(await feed.since(suspended?.revision ?? 0n), { keys: [created.value.record.id] }, 'a created key (an instance may remember its hash as unknown)')
    // A ledger write moves SQLite's data_version but not the revision: still nothing to drop.
    const r = await feed.revision()
    await writer.ledger.credit({ accountId: account.id, amount: 1_000_000_000n, kind: 'topup', postingId: `feed:${account.id}` })
    t.equal(await feed.since(r), null, 'a write to another table changes no key')
  })
}

t.test('embedded SQLite: a key revoked and an account suspended by the CLI are refused by the running gateway within 1 s', async (t) => {
  const gw = await startTestGateway()
  t.teardown(() => gw.close())
  const env = { GATEWAY_DATA_DIR: gw.location }

  t.equal(await status(gw, gw.key), 200, 'the key works (and is now in the key cache)')
  const revoke = await cli(['keys', 'revoke', (await gw.services.store.keys.listByAccount(gw.account.id))[0]?.id ?? ''], env)
  t.equal(revoke.code, 0, `the CLI revoked the key ${revoke.err}`)
  const revokedAt = Date.parse((JSON.parse(revoke.out) as { revoked_at: string }).revoked_at)
  const keyMs = await refusedAfter(gw, gw.key, 401, revokedAt)
  t.ok(keyMs <= 1000, `refused with 401 ${keyMs} ms after the revocation's own timestamp (≤ 1000 ms)`)

  // A second key of the account, cached, then the account suspended by the CLI.
  const other = await gw.services.store.keys.create({ accountId: gw.account.id, name: 'second' })
  if (!other.ok) throw new Error(other.error)
  t.equal(await status(gw, other.value.plaintext), 200, 'a second key works')
  const suspend = await cli(['accounts', 'suspend', gw.account.id], env)
  t.equal(suspend.code, 0, `the CLI suspended the account ${suspend.err}`)
  const accountMs = await refusedAfter(gw, other.value.plaintext, 403, suspend.printedAt)
  t.ok(accountMs <= 1000, `refused with 403 ${accountMs} ms after the CLI printed the suspended account (≤ 1000 ms)`)
})

t.test('PostgreSQL without Redis: a key revoked and an account suspended on one instance, or by the CLI, are refused by another within 1 s', async (t) => {
  const a = await startTestGateway({ backend: 'pg' })
  t.teardown(() => a.close())
  const b = await startTestGateway({ shareStoreWith: a, mock: a.mock })
  t.teardown(() => b.close())
  t.equal(a.services.store.bus.constructor.name, 'LocalInvalidationBus', 'no Redis: each instance has only its in-process bus')

  t.equal(await status(b, a.key), 200, 'instance B serves the key (and caches it)')
  const keyId = (await a.services.store.keys.listByAccount(a.account.id))[0]?.id ?? ''
  const revoked = await a.services.store.keys.revoke(keyId)
  if (!revoked.ok) throw new Error(revoked.error)
  const keyMs = await refusedAfter(b, a.key, 401, revoked.value.revokedAt?.getTime() ?? 0)
  t.ok(keyMs <= 1000, `instance B refuses the key revoked on instance A ${keyMs} ms after (≤ 1000 ms)`)

  const second = await a.services.store.keys.create({ accountId: a.account.id, name: 'second' })
  if (!second.ok) throw new Error(second.error)
  t.equal(await status(b, second.value.plaintext), 200, 'a second key works on B')
  const suspend = await cli(['accounts', 'suspend', a.account.id], { DATABASE_URL: TEST_DATABASE_URL, DATABASE_SCHEMA: a.location })
  t.equal(suspend.code, 0, `the CLI suspended the account ${suspend.err}`)
  const accountMs = await refusedAfter(b, second.value.plaintext, 403, suspend.printedAt)
  t.ok(accountMs <= 1000, `instance B refuses the suspended account ${accountMs} ms after the CLI printed it (≤ 1000 ms)`)
  t.equal(await status(a, second.value.plaintext), 403, 'and so does instance A')
})
