// Hot reload of gateway.yaml under load, on both stores: the admin route an operator calls
// (POST /admin/v1/config/reload) swaps the config while OpenAI SDK clients keep sending; a
// request runs to its end on the config it started on (its price), every later one on the new
// config; a bad file is refused with exactly the `check` report while the old config keeps
// serving; a stream in flight across the swap completes and is billed once; two instances on
// one PostgreSQL schema list each other with their own config hashes.
import t, { type Test } from 'tap'
import { OpenAI } from 'openai'
import { formatProblem } from '../plugins/foundation/config/index.js'
import { checkConfig, loadConfig } from '../plugins/apps/gateway/config.js'
import type { RequestLogRow } from '../plugins/foundation/store/request-log/types.js'
import { startMockUpstream } from './fixtures/mock-upstream.js'
import { expectedCost, priceOf, sleep, storeRows } from './helpers/billing.js'
import type { Backend } from './helpers/gateway.js'
import { allEntries } from './helpers/ledger.js'
import { setPrice, startReloadGateway, testRawConfig, type ReloadGateway } from './helpers/reload.js'

const MODEL = 'openai/gpt-4o-mini'
const OLD = { input: '0.15', output: '0.60' }
const NEW = { input: '15.00', output: '60.00' }

const oldPrices = testRawConfig((c) => { setPrice(c, MODEL, OLD.input, OLD.output) })
const newPrices = testRawConfig((c) => { setPrice(c, MODEL, NEW.input, NEW.output) })

/** The cost of a row's usage at the old and the new price. */
function costs (row: RequestLogRow): { old: bigint, new: bigint } {
  const units = { inputTokens: row.usage?.inputTokens ?? 0, outputTokens: row.usage?.outputTokens ?? 0 }
  return { old: expectedCost(priceOf(MODEL, oldPrices), units), new: expectedCost(priceOf(MODEL, newPrices), units) }
}

interface Sent { id: string, start: number, end: number, error: string | null }

function client (gw: ReloadGateway, headers: Record<string, string> = {}): OpenAI {
  return new OpenAI({ apiKey: gw.key, baseURL: `${gw.url}/v1`, maxRetries: 0, defaultHeaders: headers })
}

/** `workers` loops of chat completions (a short upstream delay) until `stop()`; every outcome recorded. */
function load (gw: ReloadGateway, workers: number): { sent: Sent[], stop: () => Promise<void> } {
  const sent: Sent[] = []
  const state = { running: true }
  const openai = client(gw, { 'x-mock-delay-ms': '20' })
  const loops = Array.from({ length: workers }, async (_, w) => {
    while (state.running) {
      const start = performance.now()
      try {
        const { response } = await openai.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: `load ${w}` }] }).withResponse()
        sent.push({ id: response.headers.get('x-request-id') ?? '', start, end: performance.now(), error: null })
      } catch (err) {
        sent.push({ id: '', start, end: performance.now(), error: err instanceof Error ? err.message : String(err) })
      }
    }
  })
  return { sent, stop: async () => { state.running = false; await Promise.all(loops) } }
}

/** Every row of the account once the request log has `count` of them. */
async function rowsOf (gw: ReloadGateway, count: number): Promise<Map<string, RequestLogRow>> {
  const deadline = Date.now() + 30_000
  for (;;) {
    await gw.services.requestLog.flush()
    const rows = await storeRows(gw.services.store, gw.account.id)
    if (rows.length >= count) return new Map(rows.map((r) => [r.requestId, r]))
    if (Date.now() > deadline) throw new Error(`${rows.length} of ${count} rows`)
    await sleep(20)
  }
}

/** Every charge of the ledger is one row's cost: nothing billed twice, nothing unbilled. */
async function assertBilledOnce (t: Test, gw: ReloadGateway, rows: Map<string, RequestLogRow>): Promise<void> {
  const charges = (await allEntries(gw.services.store, gw.account.id)).filter((e) => e.kind === 'charge')
  const billed = [...rows.values()].filter((r) => r.billingStatus === 'BILLED')
  t.equal(charges.length, billed.length, `one ledger charge per billed request (${billed.length})`)
  t.equal(-charges.reduce((s, e) => s + e.amount, 0n), billed.reduce((s, r) => s + (r.cost ?? 0n), 0n), 'the charges sum to the rows\' costs')
  t.equal((await gw.services.store.ledger.openHolds(gw.account.id)).length, 0, 'no hold left open')
}

/** The served config as the admin listener reports it (the public /readyz says only the status). */
async function readyz (gw: ReloadGateway): Promise<{ hash: string, last_reload_error: string | null }> {
  const { json } = await gw.admin('GET', '/readyz')
  return (json as { checks: { config: { hash: string, last_reload_error: string | null } } }).checks.config
}

async function waitFor (what: string, test: () => boolean, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!test()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await sleep(10)
  }
}

for (const backend of ['sqlite', 'pg'] as Backend[]) {
  t.test(`${backend}: a price change under load: requests started before are billed at the old price, after at the new; none fails`, async (t) => {
    const gw = await startReloadGateway({ backend, edit: (c) => { setPrice(c, MODEL, OLD.input, OLD.output) } })
    t.teardown(async () => { await gw.close() })
    const before = await readyz(gw)
    t.equal(before.hash, loadConfig(gw.file, gw.env).hash, '/readyz shows the hash check computes')

    // Pinned on the old config: slow requests and a slow stream the upstream has already received.
    const slow = client(gw, { 'x-mock-delay-ms': '3000' })
    const pinned = Array.from({ length: 3 }, async (_, i) => {
      const { response, data } = await slow.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: `pinned ${i}` }] }).withResponse()
      return { id: response.headers.get('x-request-id') ?? '', text: data.choices[0]?.message.content ?? '' }
    })
    const streamer = client(gw, { 'x-mock-chunks': '30', 'x-mock-chunk-delay-ms': '100' })
    const streamed = (async () => {
      const { data: stream, response } = await streamer.chat.completions.create({ model: MODEL, stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'a stream across the reload' }] }).withResponse()
      let chunks = 0
      let usage: unknown = null
      for await (const chunk of stream) {
        chunks++
        if (chunk.usage) usage = chunk.usage
      }
      return { id: response.headers.get('x-request-id') ?? '', chunks, usage, end: performance.now() }
    })()
    await gw.mock.waitForCalls(4)
    const traffic = load(gw, 6)
    await sleep(300)

    gw.write((c) => { setPrice(c, MODEL, NEW.input, NEW.output) })
    const expected = loadConfig(gw.file, gw.env).hash
    const sentAt = performance.now()
    t.equal(gw.host.generations, 1, 'one config generation before the reload')
    const answer = await gw.reload()
    const answeredAt = performance.now()
    t.equal(answer.status, 200, 'the reload answers 200')
    t.same(answer.json, { hash: expected, previous_hash: before.hash, changed: true }, 'new hash, previous hash, changed')
    t.equal(gw.host.generations, 2, 'the old generation stays open while its requests run')
    t.equal((await readyz(gw)).hash, expected, '/readyz shows the new hash')

    await sleep(300)
    await traffic.stop()
    const pinnedDone = await Promise.all(pinned)
    const stream = await streamed
    t.ok(stream.end > answeredAt, 'the stream was still running when the reload answered')
    t.ok(stream.chunks >= 30, `the stream completed (${stream.chunks} chunks)`)
    t.ok(stream.usage !== null, 'the stream ended with its usage chunk')
    t.ok(pinnedDone.every((p) => p.text !== ''), 'the slow requests answered')

    const failed = traffic.sent.filter((s) => s.error !== null)
    t.same(failed, [], 'zero failed requests')
    const rows = await rowsOf(gw, traffic.sent.length + pinnedDone.length + 1)
    let atOld = 0
    let atNew = 0
    for (const s of traffic.sent) {
      const row = rows.get(s.id)
      if (row === undefined) { t.fail(`no row for ${s.id}`); continue }
      const c = costs(row)
      if (row.cost === c.old) atOld++
      else if (row.cost === c.new) atNew++
      else t.fail(`row ${s.id} costs ${String(row.cost)}, neither price (${c.old}, ${c.new})`)
      if (s.end < sentAt && row.cost !== c.old) t.fail(`request ${s.id} ended before the reload and was billed ${String(row.cost)}`)
      if (s.start > answeredAt && row.cost !== c.new) t.fail(`request ${s.id} started after the reload and was billed ${String(row.cost)}`)
    }
    t.ok(atOld > 0 && atNew > 0, `requests at the old price (${atOld}) and at the new (${atNew})`)
    for (const p of [...pinnedDone.map((p) => p.id), stream.id]) {
      const row = rows.get(p)
      t.ok(row !== undefined && row.billingStatus === 'BILLED' && row.cost === costs(row).old, `${p}, in flight across the swap, billed at the old price`)
    }
    t.equal([...rows.values()].filter((r) => r.requestId === stream.id).length, 1, 'the stream has one row')
    await assertBilledOnce(t, gw, rows)
    await waitFor('the old generation to close', () => gw.host.generations === 1)
    t.pass('the old generation closed once its last request ended')
  })

  t.test(`${backend}: a bad file under load is refused with the check report; the old config keeps serving`, async (t) => {
    const gw = await startReloadGateway({ backend, edit: (c) => { setPrice(c, MODEL, OLD.input, OLD.output) } })
    t.teardown(async () => { await gw.close() })
    const before = await readyz(gw)
    t.equal(before.last_reload_error, null, 'no reload error at start')
    const traffic = load(gw, 6)
    await sleep(200)

    // A schema error (a negative port) and a reference to a pool that does not exist.
    gw.write((c) => {
      setPrice(c, MODEL, NEW.input, NEW.output)
      c.server.body_limit_bytes = -1
      const model = c.models.find((m) => m.id === MODEL)
      if (model) model.pool = 'no-such-pool'
    })
    const report = checkConfig(gw.file, gw.env).map(formatProblem)
    t.ok(report.length >= 2, `check reports the file's problems (${report.length})`)
    const answer = await gw.reload()
    t.equal(answer.status, 422, 'the reload answers 422')
    const error = answer.json.error as Record<string, unknown>
    t.equal(error.code, 'CONFIG_INVALID', 'code')
    t.equal(error.type, 'invalid_request_error', 'the admin envelope\'s type for a 422')
    t.same(error.problems, report, 'the problems exactly as check reports them')
    t.equal(answer.json.hash, before.hash, 'the hash still served')
    const after = await readyz(gw)
    t.equal(after.hash, before.hash, '/readyz: the old hash still served')
    t.ok(after.last_reload_error !== null && report.every((line) => after.last_reload_error?.includes(line)), 'GET /admin/v1/readyz shows the refusal')
    const pub = await fetch(`${gw.url}/readyz`)
    t.same(await pub.json(), { status: 'ready' }, 'the public /readyz says only the status, no refusal text')
    await sleep(200)
    await traffic.stop()

    t.same(traffic.sent.filter((s) => s.error !== null), [], 'zero failed requests')
    const rows = await rowsOf(gw, traffic.sent.length)
    t.ok(traffic.sent.length > 10, `requests served across the refusal (${traffic.sent.length})`)
    t.ok(traffic.sent.every((s) => { const r = rows.get(s.id); return r !== undefined && r.cost === costs(r).old }), 'every request billed at the old price')
    await assertBilledOnce(t, gw, rows)
    t.equal(gw.host.generations, 1, 'no second generation was built')

    // Fixed: the next reload takes it and clears the error.
    gw.write((c) => { setPrice(c, MODEL, NEW.input, NEW.output) })
    const fixed = await gw.reload()
    t.equal(fixed.status, 200, 'the fixed file reloads')
    t.equal((await readyz(gw)).last_reload_error, null, '/readyz: the error is cleared')
  })
}

t.test('a reload that changes a restart-only key is refused, located in the file', async (t) => {
  const gw = await startReloadGateway({ backend: 'sqlite' })
  t.teardown(async () => { await gw.close() })
  gw.write((c) => { c.server.port = 9 })
  const answer = await gw.reload()
  t.equal(answer.status, 422, '422')
  const problems = (answer.json.error as { problems: string[] }).problems
  t.equal(problems.length, 1, 'one problem')
  t.match(problems[0], new RegExp(`^${gw.file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:\\d+:\\d+  server\\.port  differs from the running config and a reload cannot change it`), 'file:line:col, the key, why')
  const served = await client(gw).chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'still served' }] })
  t.ok(served.choices.length > 0, 'the running config keeps serving')
  t.equal((await readyz(gw)).last_reload_error?.includes('server.port'), true, '/readyz shows the refusal')
})

t.test('the shared listener hands Node\'s client errors to the current generation: the gateway\'s envelope after a reload', async (t) => {
  const gw = await startReloadGateway({ backend: 'sqlite' })
  t.teardown(async () => { await gw.close() })
  gw.write((c) => { setPrice(c, MODEL, NEW.input, NEW.output) })
  t.equal((await gw.reload()).status, 200, 'reloaded')
  // Headers over Node's 16 KiB cap: Node refuses them before any Fastify request exists.
  const res = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'x-filler': 'x'.repeat(20_000) }, body: '{}' })
  t.equal(res.status, 431, '431')
  const body = await res.json() as { error?: { code?: string } }
  t.equal(body.error?.code, 'REQUEST_HEADERS_TOO_LARGE', 'in the chat envelope, with the catalogue code')
})

t.test('reloads asked at once run one after the other', async (t) => {
  const gw = await startReloadGateway({ backend: 'sqlite' })
  t.teardown(async () => { await gw.close() })
  const first = (await readyz(gw)).hash
  gw.write((c) => { setPrice(c, MODEL, NEW.input, NEW.output) })
  const next = loadConfig(gw.file, gw.env).hash
  const answers = await Promise.all([gw.reload(), gw.reload(), gw.reload()])
  t.same(answers.map((a) => a.status), [200, 200, 200], 'each answers 200')
  const bodies = answers.map((a) => a.json)
  t.equal(bodies.filter((b) => b.changed === true).length, 1, 'one swapped the config')
  t.same(bodies.find((b) => b.changed === true), { hash: next, previous_hash: first, changed: true }, 'from the first hash to the file\'s')
  t.same(bodies.filter((b) => b.changed === false), [{ hash: next, previous_hash: next, changed: false }, { hash: next, previous_hash: next, changed: false }], 'the others found it already in force')
  await waitFor('one generation', () => gw.host.generations === 1)
  t.pass('the old generation closed')
})

t.test('pg: two instances on one schema list each other with their config hashes', async (t) => {
  const mock = await startMockUpstream()
  t.teardown(async () => { await mock.close() })
  const a = await startReloadGateway({ backend: 'pg', mock })
  const b = await startReloadGateway({ backend: 'pg', mock, shareWith: a })
  t.teardown(async () => { await b.close(); await a.close() })
  const hash = a.host.hash
  t.equal(b.host.hash, hash, 'both start on the same config')
  const listed = await b.admin('GET', '/instances')
  t.equal(listed.status, 200, '200')
  const rows = (listed.json.data as Array<Record<string, unknown>>).map((r) => [r.id, r.config_hash, r.self, r.pid])
  t.same(rows.sort(), [[a.registry.id, hash, false, process.pid], [b.registry.id, hash, true, process.pid]].sort(), 'both instances, one hash')

  a.write((c) => { setPrice(c, MODEL, NEW.input, NEW.output) })
  const reloaded = await a.reload()
  t.equal(reloaded.status, 200, 'instance a reloads')
  const after = await b.admin('GET', '/instances')
  const byId = new Map((after.json.data as Array<Record<string, unknown>>).map((r) => [r.id, r]))
  t.equal(byId.get(a.registry.id)?.config_hash, reloaded.json.hash, 'a: the new hash, seen from b')
  t.ok(typeof byId.get(a.registry.id)?.reloaded_at === 'string', 'a: when it reloaded')
  t.equal(byId.get(b.registry.id)?.config_hash, hash, 'b: still the old hash')
  t.equal(byId.get(b.registry.id)?.reloaded_at, null, 'b: never reloaded')
  t.not(reloaded.json.hash, hash, 'two different hashes listed')

  await b.registry.stop()
  const gone = await a.admin('GET', '/instances')
  t.same((gone.json.data as Array<Record<string, unknown>>).map((r) => r.id), [a.registry.id], 'a stopped instance leaves the list')
})
