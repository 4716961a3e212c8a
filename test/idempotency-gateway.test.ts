// X-Idempotency-Key through the real gateway: 50 concurrent retries of one key over two
// instances on PostgreSQL (key-cache invalidation over Redis) and over one embedded instance
// reach the (slow) upstream once and are billed once; the others answer in progress; then
// replay-unavailable; another body, model or route conflicts. A refused request leaves its key
// usable; a job is created once; a crashed instance's claim lapses after the lease; a live
// request's claim is renewed past it; the header is validated and never forwarded.
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { request as httpRequest } from 'node:http'
import t, { type Test } from 'tap'
import { idempotencyPlugin, IDEMPOTENCY_LEASE_MS, fingerprintOf } from '../plugins/concerns/idempotency/index.js'
import { openStore } from '../plugins/foundation/store/index.js'
import { ManualClock, TEST_SECRET } from './helpers/store.js'
import { startTestGateway, type TestGateway } from './helpers/gateway.js'
import { ledgerState } from './helpers/billing.js'

const MODEL = 'openai/gpt-4o-mini'
const CONCURRENT = 50
/** The first request's upstream answers this late, so the 49 others arrive while it runs. */
const SLOW_MS = '3000'

interface Answer { status: number, code: string | null, headerCode: string | null, billed: string | null, retryAfter: string | null }

const chatBody = (content = 'say something', model = MODEL): string =>
  JSON.stringify({ model, messages: [{ role: 'user', content }], max_tokens: 16 })

async function send (gw: TestGateway, body: string, headers: Record<string, string>, path = '/v1/chat/completions', auth = gw.auth): Promise<Answer> {
  const res = await fetch(gw.url + path, { method: 'POST', headers: { 'content-type': 'application/json', ...auth, ...headers }, body })
  const text = await res.text()
  let code: string | null = null
  if (res.status >= 400) code = (JSON.parse(text) as { error?: { code?: string } }).error?.code ?? null
  return {
    status: res.status,
    code,
    headerCode: res.headers.get('x-gateway-error-code'),
    billed: res.headers.get('x-gateway-billed'),
    retryAfter: res.headers.get('retry-after')
  }
}

const newKey = (what: string): string => `${what}-${randomBytes(6).toString('hex')}`

/** Ledger: `charges` charge entries, nothing held any more (settlements run after the answers). */
async function expectLedger (t: Test, gw: TestGateway, charges: number, accountId = gw.account.id): Promise<void> {
  // Bounded wait: settlement follows the answer's last byte.
  for (let i = 0; i < 100; i++) {
    const s = await ledgerState(gw, accountId)
    if (s.openHolds === 0 && s.charges.length >= charges) break
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  const s = await ledgerState(gw, accountId)
  t.equal(s.charges.length, charges, `${charges} charge entr${charges === 1 ? 'y' : 'ies'} in the ledger`)
  t.equal(s.openHolds, 0, 'no open hold')
  t.equal(s.held, 0n, 'nothing held')
}

async function concurrentRetries (t: Test, gws: readonly TestGateway[]): Promise<void> {
  const first = gws[0] as TestGateway
  const key = newKey('retry')
  const body = chatBody('one request, retried')
  const answers = await Promise.all(Array.from({ length: CONCURRENT }, async (_, i) =>
    await send(gws[i % gws.length] as TestGateway, body, { 'x-idempotency-key': key, 'x-mock-delay-ms': SLOW_MS })))
  const served = answers.filter((a) => a.status === 200)
  const inProgress = answers.filter((a) => a.status === 409 && a.code === 'REQUEST_IDEMPOTENCY_IN_PROGRESS')
  t.equal(served.length, 1, 'exactly one request ran')
  t.equal(inProgress.length, CONCURRENT - 1, `${CONCURRENT - 1} × 409 REQUEST_IDEMPOTENCY_IN_PROGRESS`)
  t.ok(inProgress.every((a) => a.headerCode === 'REQUEST_IDEMPOTENCY_IN_PROGRESS' && a.billed === 'false' && a.retryAfter === '1'),
    'each refusal: X-Gateway-Error-Code, X-Gateway-Billed: false, Retry-After: 1')
  t.equal(first.mock.calls.length, 1, 'the upstream was called once')
  t.equal(first.mock.calls[0]?.headers['x-idempotency-key'], undefined, 'the key is not forwarded to the provider')
  await expectLedger(t, first, 1)

  for (const gw of gws) {
    const again = await send(gw, body, { 'x-idempotency-key': key })
    t.match(again, { status: 409, code: 'REQUEST_IDEMPOTENCY_REPLAY_UNAVAILABLE', billed: 'false' }, 'the same request after the end: replay unavailable')
  }
  const reordered = JSON.stringify({ max_tokens: 16, messages: [{ content: 'one request, retried', role: 'user' }], model: MODEL }, null, 2)
  t.match(await send(first, reordered, { 'x-idempotency-key': key }), { status: 409, code: 'REQUEST_IDEMPOTENCY_REPLAY_UNAVAILABLE' },
    'members in another order, other whitespace: the same request (canonical JSON)')
  const last = gws[gws.length - 1] as TestGateway
  t.match(await send(last, chatBody('another question'), { 'x-idempotency-key': key }), { status: 409, code: 'REQUEST_IDEMPOTENCY_CONFLICT' }, 'a changed body conflicts')
  t.match(await send(last, chatBody('one request, retried', 'openai/gpt-4o'), { 'x-idempotency-key': key }), { status: 409, code: 'REQUEST_IDEMPOTENCY_CONFLICT' }, 'another model conflicts')
  t.match(await send(last, body, { 'x-idempotency-key': key }, '/v1/responses'), { status: 409, code: 'REQUEST_IDEMPOTENCY_CONFLICT' }, 'another route conflicts')
  t.equal(first.mock.calls.length, 1, 'none of them reached the upstream')
  await expectLedger(t, first, 1)
  t.equal((await send(first, body, { 'x-idempotency-key': newKey('fresh') })).status, 200, 'a new key runs the same body again')
}

t.test('PostgreSQL and Redis, two instances', async (t) => {
  const channel = `idem-test-${randomBytes(6).toString('hex')}`
  const a = await startTestGateway({ backend: 'pg', redisChannel: channel })
  const b = await startTestGateway({ shareStoreWith: a, mock: a.mock, redisChannel: channel })
  // The second instance closes first: the first owns the mock and drops the schema.
  t.teardown(async () => {
    await b.close()
    await a.close()
  })
  t.equal(b.account.id, a.account.id, 'both instances serve the same account')
  await concurrentRetries(t, [a, b])
})

t.test('embedded SQLite, one instance', async (t) => {
  const gw = await startTestGateway({ backend: 'sqlite' })
  t.teardown(() => gw.close())
  await concurrentRetries(t, [gw])

  t.test('a request refused before it runs leaves its key usable', async (t) => {
    gw.mock.reset()
    const { store } = gw.services
    const account = await store.accounts.create({ name: 'empty wallet' })
    const created = await store.keys.create({ accountId: account.id, name: 'k' })
    if (!created.ok) throw new Error(created.error)
    const auth = { authorization: `Bearer ${created.value.plaintext}` }
    const key = newKey('refused')
    const body = chatBody('first refused, then paid')
    t.match(await send(gw, body, { 'x-idempotency-key': key }, '/v1/chat/completions', auth), { status: 402, code: 'BILLING_INSUFFICIENT_CREDITS' }, 'the wallet refuses it')
    t.match(await send(gw, chatBody('x', 'openai/gpt-99'), { 'x-idempotency-key': key }, '/v1/chat/completions', auth), { status: 404, code: 'MODEL_NOT_FOUND' }, 'validation refuses another')
    t.equal(gw.mock.calls.length, 0, 'nothing went upstream')
    await store.ledger.credit({ accountId: account.id, amount: 10_000_000_000n, kind: 'topup', postingId: `idem-topup:${account.id}` })
    t.equal((await send(gw, body, { 'x-idempotency-key': key }, '/v1/chat/completions', auth)).status, 200, 'after a top-up the same key runs')
    t.match(await send(gw, body, { 'x-idempotency-key': key }, '/v1/chat/completions', auth), { status: 409, code: 'REQUEST_IDEMPOTENCY_REPLAY_UNAVAILABLE' })
    t.equal(gw.mock.calls.length, 1)
    await expectLedger(t, gw, 1, account.id)
  })

  t.test('a job is created once under one key', async (t) => {
    gw.mock.reset()
    const key = newKey('job')
    const body = JSON.stringify({ model: 'openai/sora-2', prompt: 'a lighthouse at dusk' })
    const answers = await Promise.all(Array.from({ length: 5 }, async () => await send(gw, body, { 'x-idempotency-key': key, 'x-mock-delay-ms': '1000' }, '/v1/videos')))
    t.equal(answers.filter((a) => a.status === 200).length, 1, 'one create answered')
    t.equal(answers.filter((a) => a.code === 'REQUEST_IDEMPOTENCY_IN_PROGRESS').length, 4, 'the concurrent retries are in progress')
    t.match(await send(gw, body, { 'x-idempotency-key': key }, '/v1/videos'), { status: 409, code: 'REQUEST_IDEMPOTENCY_REPLAY_UNAVAILABLE' }, 'a later retry: replay unavailable')
    t.equal(gw.mock.calls.filter((c) => c.method === 'POST').length, 1, 'the provider created one job')
    t.equal((await gw.services.store.ledger.openHolds(gw.account.id)).length, 1, 'one job hold')
  })

  t.test('the header: 1 to 255 printable characters, sent once', async (t) => {
    gw.mock.reset()
    const body = chatBody('header check')
    t.equal((await send(gw, body, { 'x-idempotency-key': 'k'.repeat(255) })).status, 200, '255 characters')
    for (const [what, value] of [['256 characters', 'k'.repeat(256)], ['a non-ASCII character', 'clé'], ['a tab', 'a\tb']] as const) {
      t.match(await send(gw, body, { 'x-idempotency-key': value }), { status: 400, code: 'REQUEST_INVALID', headerCode: 'REQUEST_INVALID' }, what)
    }
    const repeated = await new Promise<number>((resolve, reject) => {
      const u = new URL(`${gw.url}/v1/chat/completions`)
      const req = httpRequest({ host: u.hostname, port: u.port, path: u.pathname, method: 'POST', headers: { 'content-type': 'application/json', ...gw.auth, 'x-idempotency-key': ['a', 'b'] } }, (res) => {
        res.resume()
        resolve(res.statusCode ?? 0)
      })
      req.on('error', reject)
      req.end(body)
    })
    t.equal(repeated, 400, 'the header twice')
    t.equal(gw.mock.calls.length, 1, 'only the valid one went upstream')
  })
})

t.test('a crashed instance: its claim lapses one lease after its last renewal', async (t) => {
  const clock = new ManualClock(new Date())
  const gw = await startTestGateway({ backend: 'sqlite', services: { clock } })
  t.teardown(() => gw.close())
  const key = newKey('crash')
  const body = chatBody('after a crash')
  // The claim a crashed instance left: same request, never renewed again.
  const fingerprint = fingerprintOf({ routeId: 'POST /v1/chat/completions', model: MODEL, body: { kind: 'json', raw: Buffer.from(body), json: JSON.parse(body) as Record<string, unknown> } })
  t.equal(await gw.services.store.idempotency.claim({ accountId: gw.account.id, key, fingerprint, owner: 'req_crashed' }, IDEMPOTENCY_LEASE_MS), 'claimed')
  clock.advance(IDEMPOTENCY_LEASE_MS - 1)
  t.match(await send(gw, body, { 'x-idempotency-key': key }), { status: 409, code: 'REQUEST_IDEMPOTENCY_IN_PROGRESS' }, 'within the lease: in progress')
  clock.advance(1)
  t.equal((await send(gw, body, { 'x-idempotency-key': key }).then((a) => a.status)), 200, 'the lease ended: the retry runs')
  t.equal(gw.mock.calls.length, 1)
})

t.test('a request that outlives the lease keeps its claim (renewed while it runs)', async (t) => {
  const LEASE = 600
  // The plugin with a short lease, on a second store over the gateway's database file.
  const dir = mkdtempSync(join(tmpdir(), 'gw-idem-'))
  const store = await openStore({ dataDir: dir, secret: TEST_SECRET })
  const gw = await startTestGateway({
    backend: 'sqlite',
    location: dir,
    server: { plugins: (d) => d.map((p) => p.name === 'idempotency' ? idempotencyPlugin({ store: store.idempotency, leaseMs: LEASE }) : p) }
  })
  t.teardown(async () => {
    await gw.close()
    await store.close()
    rmSync(dir, { recursive: true, force: true })
  })
  const key = newKey('long')
  const body = chatBody('a long answer')
  const long = send(gw, body, { 'x-idempotency-key': key, 'x-mock-delay-ms': String(LEASE * 6) })
  await gw.mock.waitForCalls(1)
  await new Promise((resolve) => setTimeout(resolve, LEASE * 3))
  t.match(await send(gw, body, { 'x-idempotency-key': key }), { status: 409, code: 'REQUEST_IDEMPOTENCY_IN_PROGRESS' }, 'three leases later the key is still held')
  t.equal((await long).status, 200)
  t.equal(gw.mock.calls.length, 1)
})
