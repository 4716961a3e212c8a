// A client that leaves a non-streamed request before its answer came (the provider sends a
// non-streamed answer's headers only once it has generated all of it) follows its provider's
// disconnect policy, as a stream's client does:
// - cancel (default): the upstream call is aborted at once, so the provider stops generating;
//   the request is billed the estimate (its input), marked estimated, status 499;
// - drain (`drain_on_disconnect`): the gateway waits for the answer (within the drain window)
//   and reads its body: the provider's reported usage is billed, once;
// - drain, but the answer does not come within the drain window: aborted then, the estimate.
// A job create whose client left is still read and its job recorded (its hold kept for the job).
// The mock's delay before its headers stands for the generation; on both stores. Outcomes are
// asserted (the mock saw the abort, or answered whole; rows, wallet), never elapsed time.
import t, { type Test } from 'tap'
import type { RecordedCall } from './fixtures/mock-upstream.js'
import { startTestGateway, type Backend, type TestGateway } from './helpers/gateway.js'
import { accountRows, expectedCost, ledgerState, priceOf, sleep } from './helpers/billing.js'
import { writeTestConfig } from './helpers/test-config.js'
import type { RequestLogRow } from '../plugins/foundation/store/request-log/types.js'

const MODEL = 'openai/gpt-4o-mini'
/** Far longer than any of these tests: a gateway that waits for it instead of cancelling fails them. */
const LONG_DELAY_MS = 60_000

/** Sends `body` to `path`, and leaves once the mock holds the call (before any answer). */
async function leave (gw: TestGateway, path: string, body: unknown, delayMs: number): Promise<RecordedCall> {
  const calls = gw.mock.calls.length
  const client = new AbortController()
  const sent = fetch(gw.url + path, {
    keepalive: false,
    method: 'POST',
    headers: { 'content-type': 'application/json', ...gw.auth, 'x-mock-delay-ms': String(delayMs) },
    body: JSON.stringify(body),
    signal: client.signal
  }).catch(() => null)
  const seen = await gw.mock.waitForCalls(calls + 1)
  client.abort()
  const res = await sent
  if (res !== null) throw new Error(`the client got an answer (${res.status}) before it left`)
  return seen[calls] as RecordedCall
}

/** The account's newest request log row once `count` rows exist. */
async function newestRow (gw: TestGateway, count: number, timeoutMs = 20_000): Promise<RequestLogRow> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    await gw.services.requestLog.flush()
    const rows = await accountRows(gw)
    if (rows.length >= count) return rows[0] as RequestLogRow
    if (Date.now() > deadline) throw new Error(`${rows.length} of ${count} request log rows after ${timeoutMs} ms`)
    await sleep(20)
  }
}

const chat = { model: MODEL, max_tokens: 16, messages: [{ role: 'user', content: 'hello there' }] }

async function gateway (t: Test, backend: Backend, drain: boolean, drainTimeoutMs: number): Promise<TestGateway> {
  const cfg = writeTestConfig((c) => {
    const openai = c.providers.openai
    if (openai === undefined) throw new Error('no openai provider')
    openai.drain_on_disconnect = drain
    openai.answer_timeout_ms = 120_000
    c.server.drain_timeout_ms = drainTimeoutMs
  })
  t.teardown(() => { cfg.remove() })
  const gw = await startTestGateway({ configFile: cfg.file, backend, credit: '10.00' })
  t.teardown(() => gw.close())
  return gw
}

/** The estimate a cancelled non-streamed chat is billed: its input, no output, once; nothing left held. */
async function billedEstimate (t: Test, gw: TestGateway, before: Awaited<ReturnType<typeof ledgerState>>, rowCount: number): Promise<void> {
  const row = await newestRow(gw, rowCount)
  t.match(row, { status: 499, outcome: 'client_disconnected', errorCode: 'REQUEST_CLIENT_DISCONNECTED', usageReported: false, billingStatus: 'BILLED', answeredModel: MODEL })
  t.ok((row.usage?.inputTokens ?? 0) > 0, 'the input is estimated')
  t.equal(row.usage?.outputTokens, 0, 'no output: none was produced for the client, and the model does not reason unseen')
  t.equal(row.cost, expectedCost(priceOf(MODEL), { inputTokens: row.usage?.inputTokens ?? 0 }), 'the charge is the estimate priced')
  const after = await ledgerState(gw)
  t.equal(after.charges.length, before.charges.length + 1, 'one charge')
  t.equal(after.balance, before.balance - (row.cost ?? 0n), 'the wallet paid the row\'s cost')
  t.equal(after.openHolds, 0, 'no open hold')
  t.equal(after.held, 0n, 'nothing held')
}

for (const backend of ['sqlite', 'pg'] as Backend[]) {
  t.test(`cancel (default): a non-streamed call is aborted when its client leaves (${backend})`, async (t) => {
    const gw = await gateway(t, backend, false, 30_000)
    const before = await ledgerState(gw)
    const call = await leave(gw, '/v1/chat/completions', chat, LONG_DELAY_MS)
    await gw.mock.waitForIdle(20_000)
    t.ok(call.clientAborted, 'the provider saw the call aborted')
    t.notOk(call.completed, 'and sent no answer')
    t.equal(gw.mock.calls.length, 1, 'not retried elsewhere')
    await billedEstimate(t, gw, before, 1)

    t.test('a job create whose client left is read all the same: the job is recorded and keeps its hold', async (t) => {
      const before = await ledgerState(gw)
      const rows = (await accountRows(gw)).length
      const call = await leave(gw, '/v1/videos', { model: 'openai/sora-2', prompt: 'a lighthouse at dusk', seconds: '4' }, 300)
      const row = await newestRow(gw, rows + 1)
      t.ok(call.completed, 'the provider answered the create whole')
      t.notOk(call.clientAborted, 'the create was not aborted (the provider may have created the job)')
      t.match(row, { operation: 'videos.create', status: 200, outcome: 'completed', billingStatus: 'PENDING' })
      const after = await ledgerState(gw)
      // A create answered but not recorded as a job releases its hold (wallet/settle.ts).
      t.equal(after.openHolds, before.openHolds + 1, 'the job\'s hold stays open: the job was recorded')
      t.equal(after.charges.length, before.charges.length, 'nothing charged before the job ends')
    })
  })

  t.test(`drain: the answer that comes after the client left is read, its reported usage billed once (${backend})`, async (t) => {
    const gw = await gateway(t, backend, true, 30_000)
    const before = await ledgerState(gw)
    const call = await leave(gw, '/v1/chat/completions', chat, 1000)
    const row = await newestRow(gw, 1)
    await gw.mock.waitForIdle(20_000)
    t.ok(call.completed, 'the provider sent its whole answer')
    t.notOk(call.clientAborted, 'and was not aborted')
    const reported = call.reported
    if (reported == null) throw new Error('the mock reported no usage')
    t.match(row, { status: 200, outcome: 'client_disconnected', errorCode: 'REQUEST_CLIENT_DISCONNECTED', usageReported: true, billingStatus: 'BILLED' })
    t.match(row.usage, { inputTokens: reported.inputTokens, outputTokens: reported.outputTokens }, 'the provider\'s usage')
    t.equal(row.cost, expectedCost(priceOf(MODEL), reported), 'priced from the provider\'s report')
    const after = await ledgerState(gw)
    t.equal(after.charges.length, before.charges.length + 1, 'one charge')
    t.equal(after.balance, before.balance - (row.cost ?? 0n), 'the wallet paid the row\'s cost')
    t.equal(after.openHolds, 0, 'no open hold')
    await sleep(200)
    t.equal((await accountRows(gw)).length, 1, 'one request log row')
    t.equal((await ledgerState(gw)).charges.length, after.charges.length, 'still one charge')
  })

  t.test(`drain: an answer that does not come within the drain window is aborted then, the estimate billed (${backend})`, async (t) => {
    const gw = await gateway(t, backend, true, 300)
    const before = await ledgerState(gw)
    const call = await leave(gw, '/v1/chat/completions', chat, LONG_DELAY_MS)
    await gw.mock.waitForIdle(20_000)
    t.ok(call.clientAborted, 'the provider saw the call aborted')
    t.notOk(call.completed, 'and sent no answer')
    await billedEstimate(t, gw, before, 1)
  })
}
