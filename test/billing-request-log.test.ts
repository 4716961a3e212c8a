// The request log: one row per request, named by the X-Request-ID the client saw, with the key's
// id (never the key), route, requested and answered model, status, error code, units, cost,
// hold and posting ids that match the ledger, and timings. The admin API lists an account's
// rows newest first, page by page. A graceful shutdown right after a burst loses no row.
import { rmSync } from 'node:fs'
import pg from 'pg'
import t, { type Test } from 'tap'
import { openStore } from '../plugins/foundation/store/index.js'
import type { RequestLogRow } from '../plugins/foundation/store/request-log/types.js'
import { dumpAllTables, TEST_DATABASE_URL, TEST_SECRET } from './helpers/store.js'
import type { RequestLogView } from '../plugins/concerns/accounts/views.js'
import { dropSchema, startTestGateway, type Backend, type TestGateway } from './helpers/gateway.js'
import { adminClient, checkWalletAgainstRows, codePoints, expectedCost, ledgerState, nanos, priceOf, settledRow, sleep, tokensFromChars } from './helpers/billing.js'

const ADMIN_TOKEN = 'request-log-admin-token-0123456789abcdef'

interface Sent {
  /** What this test asked for. */
  name: string
  requestId: string
  status: number
  /** The key header the request carried (null: none). */
  authenticated: boolean
  route: string
  requestedModel: string | null
  answeredModel: string | null
  errorCode: string | null
  upstreamCalled: boolean
  stream: boolean
  /** Expected cost; null for requests that were refused before a hold. */
  cost: bigint | null
  billingStatus: 'BILLED' | 'NOT_BILLED'
  startedAt: number
  endedAt: number
}

t.test('one row per request, every field as the request went', async (t) => {
  const gw = await startTestGateway({ credit: '50.00', server: { adminToken: ADMIN_TOKEN } })
  t.teardown(() => gw.close())
  const admin = adminClient(gw, ADMIN_TOKEN)
  const key = await gw.services.store.keys.findByLookupHash(gw.services.store.hashKey(gw.key))
  if (key === null) throw new Error('seeded key not found')
  const sent: Sent[] = []

  /** Sends one request and waits for its row, so the rows' order is the requests' order. */
  async function send (name: string, path: string, body: unknown, headers: Record<string, string>, expect: Omit<Sent, 'name' | 'requestId' | 'status' | 'startedAt' | 'endedAt'> & { status: number }): Promise<void> {
    const startedAt = Date.now()
    const res = await fetch(gw.url + path, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) })
    await res.arrayBuffer()
    const requestId = res.headers.get('x-request-id') ?? ''
    t.equal(res.status, expect.status, `${name}: HTTP ${expect.status}`)
    await settledRow(gw, requestId)
    sent.push({ ...expect, name, requestId, startedAt, endedAt: Date.now() })
    await sleep(3) // distinct created_at, so "newest first" is the reverse of this order
  }

  const bearer = { authorization: `Bearer ${gw.key}` }
  const chatPrompt = 'log this request, please'
  await send('chat JSON', '/v1/chat/completions', { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: chatPrompt }] }, bearer, {
    status: 200,
    authenticated: true,
    route: 'POST /v1/chat/completions',
    requestedModel: 'openai/gpt-4o-mini',
    answeredModel: 'openai/gpt-4o-mini',
    errorCode: null,
    upstreamCalled: true,
    stream: false,
    billingStatus: 'BILLED',
    cost: expectedCost(priceOf('openai/gpt-4o-mini'), { inputTokens: tokensFromChars(codePoints(chatPrompt)), outputTokens: 5 })
  })
  const msgPrompt = 'stream this into the log'
  await send('messages stream (alias path)', '/msgs/v1/messages', { model: 'anthropic/claude-haiku-3.5', max_tokens: 50, stream: true, messages: [{ role: 'user', content: msgPrompt }] }, { 'x-api-key': gw.key }, {
    status: 200,
    authenticated: true,
    route: 'POST /v1/messages',
    requestedModel: 'anthropic/claude-haiku-3.5',
    answeredModel: 'anthropic/claude-haiku-3.5',
    errorCode: null,
    upstreamCalled: true,
    stream: true,
    billingStatus: 'BILLED',
    cost: expectedCost(priceOf('anthropic/claude-haiku-3.5'), { inputTokens: tokensFromChars(codePoints(msgPrompt)), outputTokens: 5 })
  })
  await send('unknown model', '/v1/chat/completions', { model: 'openai/no-such-model', messages: [{ role: 'user', content: 'x' }] }, bearer, {
    status: 404,
    authenticated: true,
    route: 'POST /v1/chat/completions',
    requestedModel: 'openai/no-such-model',
    answeredModel: null,
    errorCode: 'MODEL_NOT_FOUND',
    upstreamCalled: false,
    stream: false,
    billingStatus: 'NOT_BILLED',
    cost: null
  })
  await send('upstream 500', '/v1/chat/completions', { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'x' }] }, { ...bearer, 'x-mock-status': '500' }, {
    status: 502,
    authenticated: true,
    route: 'POST /v1/chat/completions',
    requestedModel: 'openai/gpt-4o-mini',
    answeredModel: null,
    errorCode: 'UPSTREAM_ERROR',
    upstreamCalled: true,
    stream: false,
    billingStatus: 'NOT_BILLED',
    cost: 0n
  })
  gw.mock.once({ status: 500 })
  const fbPrompt = 'answered by the fallback'
  await send('fallback', '/v1/chat/completions', { model: 'openai/gpt-4o', messages: [{ role: 'user', content: fbPrompt }] }, bearer, {
    status: 200,
    authenticated: true,
    route: 'POST /v1/chat/completions',
    requestedModel: 'openai/gpt-4o',
    answeredModel: 'openai/gpt-4o-mini',
    errorCode: null,
    upstreamCalled: true,
    stream: false,
    billingStatus: 'BILLED',
    cost: expectedCost(priceOf('openai/gpt-4o-mini'), { inputTokens: tokensFromChars(codePoints(fbPrompt)), outputTokens: 5 })
  })
  // Quality and size left to the provider (`auto`): held at the dearest entry, charged at the one
  // the answer says it rendered (the mock renders what x-mock-image-rendered names), plus the
  // prompt's input tokens.
  const imagePrompt = 'two dots'
  const rendered = { quality: 'low', size: '1536x1024' }
  await send('two images', '/v1/images/generations', { model: 'openai/gpt-image-1', prompt: imagePrompt, n: 2 }, { ...bearer, 'x-mock-image-rendered': `${rendered.quality}/${rendered.size}` }, {
    status: 200,
    authenticated: true,
    route: 'POST /v1/images/generations',
    requestedModel: 'openai/gpt-image-1',
    answeredModel: 'openai/gpt-image-1',
    errorCode: null,
    upstreamCalled: true,
    stream: false,
    billingStatus: 'BILLED',
    cost: expectedCost(priceOf('openai/gpt-image-1'), { images: 2, imageTier: rendered, inputTokens: tokensFromChars(codePoints(imagePrompt)) })
  })
  await send('no key', '/v1/chat/completions', { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'x' }] }, {}, {
    status: 401,
    authenticated: false,
    route: 'POST /v1/chat/completions',
    requestedModel: null,
    answeredModel: null,
    errorCode: 'AUTH_API_KEY_REQUIRED',
    upstreamCalled: false,
    stream: false,
    billingStatus: 'NOT_BILLED',
    cost: null
  })

  const ledger = await ledgerState(gw)
  for (const s of sent) {
    t.test(s.name, async (t) => {
      const row = await gw.services.store.requestLog.get(s.requestId)
      if (row === null) throw new Error(`no row for ${s.requestId}`)
      t.match(s.requestId, /^req_[0-9a-f]{32}$/, 'X-Request-ID names the row')
      t.equal(row.accountId, s.authenticated ? gw.account.id : null, 'account id')
      t.equal(row.keyId, s.authenticated ? key.id : null, 'key id (the key\'s row id)')
      t.equal(row.route, s.route, 'route')
      t.equal(row.requestedModel, s.requestedModel, 'requested model')
      t.equal(row.answeredModel, s.answeredModel, 'answered model')
      t.equal(row.status, s.status, 'HTTP status')
      t.equal(row.errorCode, s.errorCode, 'error code')
      t.equal(row.stream, s.stream, 'stream flag')
      t.equal(row.billingStatus, s.billingStatus, 'billing status')
      t.equal(row.cost, s.cost, 'cost')
      if (s.cost === null) {
        t.equal(row.holdId, null, 'refused before the wallet: no hold')
        t.equal(row.held, null)
      } else {
        t.match(row.holdId, /^hold_/, 'hold id')
        t.ok(row.held !== null && row.held >= s.cost, 'held ≥ cost')
      }
      const charge = ledger.charges.find((e) => e.requestId === s.requestId)
      if (s.billingStatus === 'BILLED') {
        t.equal(row.postingId, charge?.postingId, 'posting id = the ledger charge\'s posting')
        t.equal(charge?.holdId, row.holdId, 'the charge settled the row\'s hold')
        t.equal(charge?.amount, -(s.cost ?? 0n), 'the charge is the row\'s cost')
      } else {
        t.equal(row.postingId, null, 'no posting')
        t.equal(charge, undefined, 'no charge in the ledger')
      }
      if (s.billingStatus === 'BILLED') {
        t.ok(row.usage !== null && row.usageReported === true, 'usage reported by the provider')
        if (s.name === 'two images') t.match(row.usage, { images: 2, imageTier: rendered }, 'units: 2 images at the tier the answer rendered')
        else t.equal(row.usage?.outputTokens, 5, 'units: 5 output tokens')
      }
      t.ok(Number.isFinite(row.totalMs) && row.totalMs >= 0, `total ${row.totalMs.toFixed(2)} ms`)
      t.ok(row.totalMs <= s.endedAt - s.startedAt + 50, 'total time within what the client measured')
      if (s.upstreamCalled && s.billingStatus === 'BILLED') {
        t.ok(row.overheadMs !== null && row.overheadMs >= 0 && row.overheadMs <= row.totalMs, `overhead ${String(row.overheadMs)} ms ≤ total`)
        t.ok(row.upstreamMs !== null && row.upstreamMs >= 0 && row.upstreamMs <= row.totalMs, `upstream ${String(row.upstreamMs)} ms ≤ total`)
      } else if (!s.upstreamCalled) {
        t.equal(row.upstreamMs, null, 'no upstream time')
      }
      t.ok(row.createdAt.getTime() >= s.startedAt - 5 && row.createdAt.getTime() <= s.endedAt + 5, 'created during the request')
    })
  }

  t.test('the key never appears in any stored row or admin answer', async (t) => {
    const tables = await dumpAllTables(gw.services.store)
    const logRows = tables.request_log ?? []
    t.equal(logRows.length, sent.length, 'one stored row per request (the unauthenticated one included)')
    const plain = JSON.stringify(logRows, (_k, v: unknown) => typeof v === 'bigint' ? v.toString() : v)
    t.notOk(plain.includes(gw.key), 'no plaintext key in the request_log table')
    t.notOk(plain.includes(gw.key.slice(3, 20)), 'not even part of its secret')
    const listed = await fetch(`${gw.url}/admin/v1/requests?account_id=${gw.account.id}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
    t.notOk((await listed.text()).includes(gw.key), 'no plaintext key in the admin listing')
  })

  t.test('GET /admin/v1/requests?account_id= lists newest first, page by page', async (t) => {
    const mine = sent.filter((s) => s.authenticated).map((s) => s.requestId).reverse()
    const pages: RequestLogView[][] = []
    let before: string | null = null
    do {
      const page: { status: number, json: { data: RequestLogView[], has_more: boolean, next_before: string | null } } =
        await admin('GET', `/requests?account_id=${gw.account.id}&limit=2${before === null ? '' : `&before=${encodeURIComponent(before)}`}`)
      t.equal(page.status, 200)
      pages.push(page.json.data)
      t.equal(page.json.has_more, page.json.next_before !== null, 'has_more iff there is a next page')
      before = page.json.next_before
    } while (before !== null && pages.length < 20)
    t.same(pages.map((p) => p.length), [2, 2, 2], `${mine.length} rows in pages of 2`)
    const listed = pages.flat()
    t.same(listed.map((r) => r.request_id), mine, 'newest first: the reverse of the order the requests were sent')
    const stored = new Map<string, RequestLogRow>()
    for (const id of mine) {
      const row = await gw.services.store.requestLog.get(id)
      if (row !== null) stored.set(id, row)
    }
    for (const v of listed) {
      const row = stored.get(v.request_id)
      t.equal(v.cost === null ? null : nanos(v.cost), row?.cost ?? null, `${v.request_id}: cost as a decimal string`)
      t.equal(v.key_id, row?.keyId, 'key id')
      t.equal(v.hold_id, row?.holdId, 'hold id')
      t.equal(v.posting_id, row?.postingId, 'posting id')
    }
    const other = await admin<{ data: unknown[] }>('GET', '/requests?account_id=acct_nobody')
    t.same(other.json.data, [], 'another account sees none of them')
  })
})

/**
 * What a shutdown may race: `slowSettle` makes every settlement wait on the database while the
 * server closes (another connection holds the wallet row lock for a second, as another
 * instance's batch or a slow database would).
 */
async function shutdownLosesNothing (t: Test, backend: Backend, slowSettle = false): Promise<void> {
  const BURST = 300
  const gw: TestGateway = await startTestGateway({ backend, credit: '100.00' })
  let closed = false
  t.teardown(async () => {
    if (!closed) await gw.close()
    else {
      await gw.mock.close()
      if (backend === 'pg') await dropSchema(gw.location)
      else rmSync(gw.location, { recursive: true, force: true })
    }
  })
  const prompt = 'shutdown burst'
  const answers = Promise.all(Array.from({ length: BURST }, async () => {
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...gw.auth, 'x-mock-delay-ms': '150' },
      body: JSON.stringify({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: prompt }] })
    })
    const body = await res.json() as { choices?: unknown[] }
    return { status: res.status, complete: Array.isArray(body.choices), requestId: res.headers.get('x-request-id') }
  }))
  // Every request is inside the gateway, waiting for the provider, when the shutdown starts.
  await gw.mock.waitForCalls(BURST, 30_000)
  let locker: pg.Client | undefined
  let committed: Promise<unknown> = Promise.resolve()
  if (slowSettle) {
    locker = new pg.Client({ connectionString: TEST_DATABASE_URL })
    await locker.connect()
    await locker.query(`SET search_path TO "${gw.location}"`)
    await locker.query('BEGIN')
    await locker.query('SELECT 1 FROM wallets WHERE account_id = $1 FOR UPDATE', [gw.account.id])
    // The answers reach the clients; their settlements queue behind the lock.
    const lock = locker
    // Awaited before the locker ends: on a busy machine the shutdown can finish first (its
    // settlements done before the lock was taken), and a COMMIT sent to an ended client rejects.
    committed = new Promise((resolve) => setTimeout(resolve, 1000)).then(async () => await lock.query('COMMIT'))
  }
  const started = performance.now()
  await gw.app.close()
  await gw.services.close()
  closed = true
  await committed
  await locker?.end()
  const results = await answers
  t.comment(`${backend}${slowSettle ? ', settlements held back 1 s' : ''}: shutdown with ${BURST} requests in flight took ${(performance.now() - started).toFixed(0)} ms`)
  t.equal(results.filter((r) => r.status === 200 && r.complete).length, BURST, 'every request in flight was answered in full')

  const store = await openStore({ secret: TEST_SECRET, ...(backend === 'pg' ? { databaseUrl: TEST_DATABASE_URL, schema: gw.location } : { dataDir: gw.location }) })
  try {
    const rows: RequestLogRow[] = []
    let before: string | undefined
    for (;;) {
      const page = await store.requestLog.list({ accountId: gw.account.id, limit: 1000, ...(before === undefined ? {} : { before }) })
      rows.push(...page.rows)
      if (page.nextBefore === null) break
      before = page.nextBefore
    }
    t.equal(rows.length, BURST, `all ${BURST} rows are in the reopened store`)
    t.same(new Set(rows.map((r) => r.requestId)), new Set(results.map((r) => r.requestId)), 'they are the answered requests')
    t.ok(rows.every((r) => r.billingStatus === 'BILLED' && r.cost !== null && r.cost > 0n), 'every row BILLED')
    await checkWalletAgainstRows(t, store, gw.account.id, rows, nanos('100.00'))
  } finally {
    await store.close()
  }
}

t.test('graceful shutdown right after a burst loses no row: SQLite', async (t) => { await shutdownLosesNothing(t, 'sqlite') })
t.test('graceful shutdown right after a burst loses no row: PostgreSQL', async (t) => { await shutdownLosesNothing(t, 'pg') })
t.test('graceful shutdown while settlements wait on the database loses no row (PostgreSQL)', async (t) => { await shutdownLosesNothing(t, 'pg', true) })

// A newcomer lists the log right after an answer: the admin listing writes the rows this
// process still has queued first. The writer here would hold a row for an hour on its own, so
// the row is in the listing only because the listing flushed it.
t.test('the admin listing shows a request whose row is still queued', async (t) => {
  const gw = await startTestGateway({ credit: '5.00', server: { adminToken: ADMIN_TOKEN }, services: { requestLogFlushMs: 3_600_000 } })
  t.teardown(() => gw.close())
  const admin = adminClient(gw, ADMIN_TOKEN)
  const res = await fetch(gw.url + '/v1/chat/completions', {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${gw.key}` },
    body: JSON.stringify({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'Hi' }] })
  })
  await res.arrayBuffer()
  t.equal(res.status, 200, 'answered')
  while (gw.services.requestLog.pending === 0) await sleep(5) // the finish phase queued it
  t.equal(gw.services.requestLog.pending, 1, 'the row is queued, not stored')
  const listed = await admin<{ data: RequestLogView[] }>('GET', `/requests?account_id=${gw.account.id}`)
  t.equal(listed.status, 200)
  t.same(listed.json.data.map((r) => r.request_id), [res.headers.get('x-request-id')], 'the listing shows it')
  t.equal(gw.services.requestLog.pending, 0, 'and it is stored')
})
