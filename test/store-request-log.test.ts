// RequestLogStore contract, run against SQLite and PostgreSQL.
import t from 'tap'
import { InvalidCursorError, type RequestLogRow, type Store } from '../plugins/foundation/store/index.js'
import { dumpAllTables, testBackends } from './helpers/store.js'

const T0 = Date.parse('2030-01-01T00:00:00.000Z')

// Type level: the row has exactly these fields, none of which can hold an API key.
type RowField =
  | 'requestId' | 'accountId' | 'keyId' | 'route' | 'operation' | 'requestedModel' | 'answeredModel'
  | 'status' | 'outcome' | 'errorCode' | 'stream' | 'usage' | 'usageReported' | 'cost' | 'held'
  | 'holdId' | 'postingId' | 'overage' | 'unrecovered' | 'billingStatus' | 'overheadMs' | 'upstreamMs' | 'totalMs' | 'createdAt' | 'idempotencyKey'
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false
type KeyLikeField = 'key' | 'apiKey' | 'plaintext' | 'secret' | 'token' | 'authorization' | 'sealedKey' | 'lookupHash'
const exactFields: Same<keyof RequestLogRow, RowField> = true
const noKeyField: [Extract<keyof RequestLogRow, KeyLikeField>] extends [never] ? true : false = true

const ROW_FIELDS: RowField[] = [
  'requestId', 'accountId', 'keyId', 'route', 'operation', 'requestedModel', 'answeredModel',
  'status', 'outcome', 'errorCode', 'stream', 'usage', 'usageReported', 'cost', 'held',
  'holdId', 'postingId', 'overage', 'unrecovered', 'billingStatus', 'overheadMs', 'upstreamMs', 'totalMs', 'createdAt', 'idempotencyKey',
]
const COLUMNS = [
  'request_id', 'account_id', 'key_id', 'route', 'operation', 'requested_model', 'answered_model',
  'status', 'outcome', 'error_code', 'stream', 'usage', 'usage_reported', 'cost', 'held',
  'hold_id', 'posting_id', 'overage', 'unrecovered', 'billing_status', 'overhead_ms', 'upstream_ms', 'total_ms', 'created_at', 'idempotency_key',
]

function row (requestId: string, fields: Partial<RequestLogRow> = {}): RequestLogRow {
  return {
    requestId,
    accountId: 'acct_a',
    keyId: 'key_a',
    route: 'POST /v1/chat/completions',
    operation: 'chat.completions',
    requestedModel: 'gpt-4o-mini',
    answeredModel: 'gpt-4o-mini',
    status: 200,
    outcome: 'completed',
    errorCode: null,
    stream: false,
    usage: { inputTokens: 12, outputTokens: 34, cachedInputTokens: 5, images: 0, audioSeconds: 0, characters: 0, calls: 0, jobs: 0 },
    usageReported: true,
    cost: 123_456n,
    held: 200_000n,
    holdId: 'hold_1',
    postingId: 'post_1',
    overage: null,
    unrecovered: null,
    billingStatus: 'BILLED',
    idempotencyKey: null,
    overheadMs: 1.75,
    upstreamMs: 420.5,
    totalMs: 422.25,
    createdAt: new Date(T0),
    ...fields,
  }
}

const json = (value: unknown): string =>
  JSON.stringify(value, (_, v: unknown) => (typeof v === 'bigint' ? v.toString() : v))

async function allPages (
  store: Store,
  q: { accountId?: string; from?: Date; to?: Date },
  limit: number
): Promise<{ ids: string[]; pages: number }> {
  const ids: string[] = []
  let before: string | undefined
  let pages = 0
  for (;;) {
    const page = await store.requestLog.list({ ...q, limit, ...(before === undefined ? {} : { before }) })
    pages += 1
    ids.push(...page.rows.map((r) => r.requestId))
    if (page.nextBefore === null) return { ids, pages }
    before = page.nextBefore
  }
}

t.test('type level: exact fields, no key field', async (t) => {
  t.equal(exactFields, true)
  t.equal(noKeyField, true)
  const sample = row('req_type')
  // @ts-expect-error a request log row has no field for the key itself
  const withKey: RequestLogRow = { ...sample, apiKey: 'sk-not-allowed' }
  t.ok(withKey)
  t.same(Object.keys(sample).sort(), [...ROW_FIELDS].sort(), 'the sample row is a complete row')
})

for (const backend of testBackends()) {
  t.test(`request log (${backend.name})`, async (t) => {
    t.teardown(() => backend.cleanup())
    const store = await backend.open()
    const log = store.requestLog

    t.test('get returns the row insertMany stored, field for field', async (t) => {
      const full = row('req_full', { stream: true, errorCode: null })
      const bare = row('req_bare', {
        accountId: null,
        keyId: null,
        requestedModel: null,
        answeredModel: null,
        status: 401,
        outcome: 'refused',
        errorCode: 'AUTH_API_KEY_MISSING',
        usage: null,
        usageReported: null,
        cost: null,
        held: null,
        holdId: null,
        postingId: null,
        billingStatus: 'NOT_BILLED',
        overheadMs: null,
        upstreamMs: null,
        totalMs: 0.4,
      })
      const estimated = row('req_est', {
        outcome: 'client_disconnected',
        status: 200,
        stream: true,
        usageReported: false,
        usage: { inputTokens: 0, outputTokens: 0, cachedInputTokens: 0, images: 2, audioSeconds: 12.5, characters: 300, calls: 1, jobs: 1 },
        billingStatus: 'PENDING',
      })
      const over = row('req_over', { cost: 9_000_000n, held: 655_000n, overage: 8_345_000n })
      const lost = row('req_lost', { cost: 1_000_000n, held: 655_000n, overage: 345_000n, unrecovered: 41_000_000n })
      await log.insertMany([full, bare, estimated, over, lost])
      t.same(await log.get('req_full'), full)
      t.same(await log.get('req_bare'), bare)
      t.same(await log.get('req_est'), estimated)
      t.same(await log.get('req_over'), over, 'a charge above its hold keeps its overage mark')
      t.same(await log.get('req_lost'), lost, 'a charge stopped at the bound keeps its unrecovered part')
      const got = await log.get('req_full')
      t.ok(got?.createdAt instanceof Date && got.createdAt.getTime() === T0, 'createdAt is a Date, ms exact')
      t.equal(await log.get('req_unknown'), null)
      await log.insertMany([])
      t.pass('an empty batch is a no-op')
    })

    t.test('the idempotency key is stored, and the listing filters by it (the original and its retries)', async (t) => {
      const key = 'order-7f3a'
      await log.insertMany([
        row('req_idem_first', { idempotencyKey: key, createdAt: new Date(T0 + 1) }),
        row('req_idem_retry', { idempotencyKey: key, status: 409, outcome: 'refused', errorCode: 'REQUEST_IDEMPOTENCY_REPLAY_UNAVAILABLE', createdAt: new Date(T0 + 2) }),
        row('req_idem_other', { idempotencyKey: 'another-key', createdAt: new Date(T0 + 3) }),
        row('req_idem_none', { createdAt: new Date(T0 + 4) })
      ])
      t.equal((await log.get('req_idem_first'))?.idempotencyKey, key, 'stored and read back')
      t.equal((await log.get('req_idem_none'))?.idempotencyKey, null, 'no key: null')
      const page = await log.list({ limit: 10, idempotencyKey: key })
      t.same(page.rows.map((r) => r.requestId), ['req_idem_retry', 'req_idem_first'], 'the two requests sent with the key, newest first')
      const scoped = await log.list({ limit: 10, idempotencyKey: key, accountId: 'acct_other' })
      t.same(scoped.rows, [], 'combined with another account: nothing')
      const paged = await log.list({ limit: 1, idempotencyKey: key })
      t.same(paged.rows.map((r) => r.requestId), ['req_idem_retry'])
      const next = await log.list({ limit: 1, idempotencyKey: key, before: paged.nextBefore ?? '' })
      t.same(next.rows.map((r) => r.requestId), ['req_idem_first'], 'the cursor pages within the filter')
    })

    t.test('bigint cost and hold round trip beyond 2^53', async (t) => {
      const amounts = [0n, 1n, 2n ** 53n + 1n, 123_456_789_012_345_678n, 2n ** 63n - 1n]
      await log.insertMany(amounts.map((cost, i) => row(`req_money_${i}`, { cost, held: cost })))
      for (const [i, cost] of amounts.entries()) {
        const got = await log.get(`req_money_${i}`)
        t.equal(typeof got?.cost, 'bigint')
        t.equal(got?.cost, cost, `cost ${cost}`)
        t.equal(got?.held, cost, `held ${cost}`)
      }
      await t.rejects(log.insertMany([row('req_money_big', { cost: 2n ** 63n })]), RangeError, 'beyond int64')
      await t.rejects(log.insertMany([row('req_money_neg', { held: -1n })]), RangeError, 'negative')
      await t.rejects(log.insertMany([row('req_over_zero', { overage: 0n })]), RangeError, 'an overage of 0 is no overage: null')
      await t.rejects(log.insertMany([row('req_over_neg', { overage: -5n })]), RangeError, 'negative overage')
      await t.rejects(log.insertMany([row('req_lost_zero', { unrecovered: 0n })]), RangeError, 'an unrecovered part of 0 is none: null')
      await t.rejects(log.insertMany([row('req_lost_neg', { unrecovered: -5n })]), RangeError, 'negative unrecovered part')
      t.equal(await log.get('req_money_big'), null)
    })

    t.test('duplicate requestId: the first is kept, the rest ignored', async (t) => {
      const first = row('req_dup', { status: 200 })
      await log.insertMany([first])
      await log.insertMany([row('req_dup', { status: 502, outcome: 'upstream_error' })])
      t.same(await log.get('req_dup'), first, 'a later batch does not overwrite')
      await log.insertMany([row('req_dup_in', { status: 201 }), row('req_dup_in', { status: 500 }), row('req_dup_other')])
      t.equal((await log.get('req_dup_in'))?.status, 201, 'within one batch the first wins')
      t.ok(await log.get('req_dup_other'), 'the rest of the batch is stored')
      await log.insertMany([row('req_dup', { status: 999 }), row('req_dup_next')])
      t.same(await log.get('req_dup'), first)
      t.ok(await log.get('req_dup_next'), 'a duplicate does not fail its batch')
    })

    t.test('a malformed row refuses the whole batch before the database', async (t) => {
      const bad = { ...row('req_bad'), status: 'ok' } as unknown as RequestLogRow
      await t.rejects(log.insertMany([row('req_bad_batch_ok'), bad]), { name: 'RangeError', message: /req_bad.*status/ })
      t.equal(await log.get('req_bad_batch_ok'), null, 'nothing of the batch stored')
      await t.rejects(log.insertMany([row('req_bad_bs', { billingStatus: 'FREE' as RequestLogRow['billingStatus'] })]), RangeError)
      await t.rejects(log.insertMany([row('req_bad_ms', { totalMs: Number.NaN })]), RangeError)
      await t.rejects(log.insertMany([row('req_bad_date', { createdAt: new Date(Number.NaN) })]), RangeError)
      await t.rejects(log.insertMany([row('')]), RangeError, 'empty request id')
    })

    t.test('text with NUL is stored with U+FFFD on both backends', async (t) => {
      await log.insertMany([row('req_nul', { requestedModel: 'gpt\u0000-4', errorCode: null })])
      t.equal((await log.get('req_nul'))?.requestedModel, 'gpt\uFFFD-4')
    })

    t.test('list by account: newest first, cursor pages, ties broken by requestId', async (t) => {
      const rows: RequestLogRow[] = []
      // 23 rows for acct_p over 15 distinct milliseconds (ties included), 4 for acct_q, 2 without account.
      for (let i = 0; i < 23; i++) {
        rows.push(row(`req_p_${String(i).padStart(2, '0')}`, { accountId: 'acct_p', createdAt: new Date(T0 + 60_000 + Math.floor(i / 3) * 1000) }))
      }
      for (let i = 0; i < 4; i++) rows.push(row(`req_q_${i}`, { accountId: 'acct_q', createdAt: new Date(T0 + 60_000 + i * 1000) }))
      rows.push(row('req_anon_1', { accountId: null, createdAt: new Date(T0 + 61_000) }))
      rows.push(row('req_anon_2', { accountId: null, createdAt: new Date(T0 + 61_000) }))
      // Inserted shuffled: the order comes from the query, not from insertion.
      await log.insertMany([...rows].reverse().filter((_, i) => i % 2 === 0))
      await log.insertMany([...rows].reverse().filter((_, i) => i % 2 === 1))

      const newestFirst = (xs: RequestLogRow[]): string[] =>
        [...xs]
          .sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime() || (a.requestId < b.requestId ? 1 : -1))
          .map((r) => r.requestId)
      const expectedP = newestFirst(rows.filter((r) => r.accountId === 'acct_p'))
      t.equal(expectedP[0], 'req_p_22')

      const first = await log.list({ accountId: 'acct_p', limit: 5 })
      t.same(first.rows.map((r) => r.requestId), expectedP.slice(0, 5))
      t.type(first.nextBefore, 'string')
      t.same(first.rows[0], rows.find((r) => r.requestId === 'req_p_22'), 'list returns whole rows')

      for (const limit of [1, 3, 5, 7, 23, 1000]) {
        const { ids, pages } = await allPages(store, { accountId: 'acct_p' }, limit)
        t.same(ids, expectedP, `limit ${limit}: every row once, newest first`)
        t.equal(pages, Math.max(1, Math.ceil(23 / limit)), `limit ${limit}: no empty trailing page`)
      }
      t.same((await allPages(store, { accountId: 'acct_q' }, 3)).ids, ['req_q_3', 'req_q_2', 'req_q_1', 'req_q_0'])
      t.same(await log.list({ accountId: 'acct_nobody', limit: 10 }), { rows: [], nextBefore: null })

      // A cursor is a position, not an offset: newer rows arriving between pages do not shift the next page.
      const page1 = await log.list({ accountId: 'acct_p', limit: 10 })
      await log.insertMany([row('req_p_newer', { accountId: 'acct_p', createdAt: new Date(T0 + 3_600_000) })])
      const page2 = await log.list({ accountId: 'acct_p', limit: 10, before: page1.nextBefore ?? '' })
      t.same(page2.rows.map((r) => r.requestId), expectedP.slice(10, 20))
    })

    t.test('list by time window: from inclusive, to exclusive, across accounts', async (t) => {
      const base = T0 + 86_400_000
      const rows = Array.from({ length: 12 }, (_, i) =>
        row(`req_w_${String(i).padStart(2, '0')}`, { accountId: i % 3 === 0 ? 'acct_w2' : 'acct_w', createdAt: new Date(base + i * 1000) })
      )
      await log.insertMany(rows)
      const from = new Date(base + 2000)
      const to = new Date(base + 9000)
      const { ids } = await allPages(store, { accountId: 'acct_w', from, to }, 2)
      t.same(ids, ['req_w_08', 'req_w_07', 'req_w_05', 'req_w_04', 'req_w_02'])
      const all = await allPages(store, { from, to }, 4)
      t.same(all.ids, ['req_w_08', 'req_w_07', 'req_w_06', 'req_w_05', 'req_w_04', 'req_w_03', 'req_w_02'], 'no account: every account')
      t.same((await allPages(store, { accountId: 'acct_w2', from: new Date(base + 9000) }, 10)).ids, ['req_w_09'])
      t.same((await allPages(store, { accountId: 'acct_w2', to: new Date(base + 3000) }, 10)).ids, ['req_w_00'])
      t.same((await log.list({ from: to, to: from, limit: 10 })).rows, [], 'empty window')
    })

    t.test('a batch of 150 rows stores each row once, field for field', async (t) => {
      const at = (i: number): Date => new Date(T0 + 2 * 86_400_000 + i)
      await log.insertMany([row('req_big_005', { accountId: 'acct_big', createdAt: at(5), cost: 1n })])
      // 150 rows (SQLite runs its single-row insert once a row, PostgreSQL one unnest for all);
      // one id already stored and one repeated inside the batch keep their first version.
      const rows = Array.from({ length: 150 }, (_, i) =>
        row(`req_big_${String(i).padStart(3, '0')}`, { accountId: 'acct_big', createdAt: at(i), cost: BigInt(1000 + i), totalMs: i + 0.25 })
      )
      rows.push(row('req_big_100', { accountId: 'acct_big', createdAt: at(100), cost: 7n }))
      await log.insertMany(rows)
      const { ids } = await allPages(store, { accountId: 'acct_big' }, 1000)
      t.equal(ids.length, 150, 'every id once')
      t.same(ids, rows.slice(0, 150).map((r) => r.requestId).reverse())
      t.equal((await log.get('req_big_005'))?.cost, 1n, 'the stored row wins over the batch')
      t.equal((await log.get('req_big_100'))?.cost, 1100n, 'the first row of a repeated id wins')
      t.same(await log.get('req_big_149'), rows[149], 'the last row')
      t.same(await log.get('req_big_064'), rows[64], 'a row from the middle')
    })

    t.test('limits and cursors are checked', async (t) => {
      await t.rejects(log.list({ limit: 0 }), RangeError)
      await t.rejects(log.list({ limit: 1001 }), RangeError)
      await t.rejects(log.list({ limit: 1.5 }), RangeError)
      await t.rejects(log.list({ limit: 10, before: 'not a cursor!' }), InvalidCursorError)
      await t.rejects(log.list({ limit: 10, before: Buffer.from('garbage').toString('base64url') }), InvalidCursorError)
      await t.rejects(log.list({ limit: 10, before: '' }), InvalidCursorError)
    })

    t.test('no key plaintext in the request log: not in the type, not in any column', async (t) => {
      const account = await store.accounts.create({ name: 'logged' })
      const created = await store.keys.create({ accountId: account.id, name: 'logged key' })
      if (!created.ok) throw new Error(created.error)
      const { plaintext, record } = created.value
      const rows = [
        row('req_key_1', { accountId: account.id, keyId: record.id }),
        // A caller smuggling extra properties past the type: none of them is stored.
        { ...row('req_key_2', { accountId: account.id, keyId: record.id }), key: plaintext, apiKey: plaintext, authorization: `Bearer ${plaintext}` } as RequestLogRow,
      ]
      await store.requestLog.insertMany(rows)
      await t.rejects(
        store.requestLog.insertMany([row('req_key_3', { keyId: plaintext })]),
        { name: 'RangeError', message: /keyId holds an API key/ },
        'a plaintext key in keyId is refused'
      )
      await t.rejects(store.requestLog.insertMany([row('req_key_4', { keyId: 'gw_live_legacy0123456789' })]), RangeError)

      const got = await store.requestLog.get('req_key_2')
      t.same(Object.keys(got ?? {}).sort(), [...ROW_FIELDS].sort(), 'get returns exactly the row fields')
      t.equal(got?.keyId, record.id)

      const tables = await dumpAllTables(store)
      const logged = tables['request_log'] ?? []
      t.ok(logged.length >= 2, 'request_log dumped')
      const columns = Object.keys((logged[0] ?? {}) as Record<string, unknown>)
      t.same([...columns].sort(), [...COLUMNS].sort(), 'request_log has exactly the expected columns')
      const dump = json(logged)
      t.notOk(dump.includes(plaintext), 'plaintext key not in request_log')
      t.notOk(dump.includes(plaintext.slice(8)), 'secret part not in request_log')
      t.notOk(json(tables).includes(plaintext.slice(8)), 'secret part in no table at all')
    })
  })
}
