// Hostile client: one that stops reading its answer. The probe of issue 11: 12 MB of answer
// (3,000,000 output tokens reported) to a client that pauses 7 s with a 4 s hold TTL was
// `completed`, cost 0.00, NOT_BILLED; two such clients on a pool of 2 upstream connections
// made a third request hang. On both stores: the stalled client is cut after the stall bound
// and billed in full while it is still paused; a pause under the bound gets the whole answer
// and is billed in full (the hold was renewed past its TTL); a third request is not held up.
import t from 'tap'
import { startTestGateway, type Backend, type TestGateway } from '../helpers/gateway.js'
import { expectedCost, ledgerState, priceOf, settledRow } from '../helpers/billing.js'
import { answerOn, openConnection, requestHead, type RawConnection } from '../helpers/raw-http.js'
import { modelOf, providerOf, writeTestConfig, type RawConfig } from '../helpers/test-config.js'

const MODEL = 'openai/gpt-4o-mini'
const OUTPUT_TOKENS = 3_000_000 // "echo: x" words: about 12 MB of answer
const HOLD_TTL_MS = 4000
const CLIENT_PAUSE_MS = 7000

function hostileConfig (stallMs: number): { file: string, remove: () => void, raw: RawConfig } {
  let raw: RawConfig | undefined
  const written = writeTestConfig((c) => {
    c.server.client_write_stall_ms = stallMs
    c.server.drain_timeout_ms = 5000
    c.wallet = { ...(c.wallet as Record<string, unknown>), hold_ttl_ms: HOLD_TTL_MS, reaper_interval_ms: 250 }
    providerOf(c, 'openai').connections = 2
    // Billed in full: the cut client's upstream is read on for its usage (the default cancels
    // it and bills what was read, estimated; see test/upstream-resilience.test.ts).
    providerOf(c, 'openai').drain_on_disconnect = true
    // The hold covers the whole answer, so "billed in full" is the full price, not a capped one.
    modelOf(c, MODEL).max_output_tokens = 4_000_000
    raw = c
  })
  if (raw === undefined) throw new Error('config not edited')
  return { ...written, raw }
}

/** Sends a non-streamed chat completion on a connection that reads nothing of its answer. */
async function stalledClient (gw: TestGateway): Promise<RawConnection> {
  const conn = await openConnection(gw.url, { paused: true })
  const body = JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: 'x' }] })
  conn.socket.write(requestHead('POST', '/v1/chat/completions', {
    authorization: `Bearer ${gw.key}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body)
  }) + body)
  return conn
}

async function requestIdOf (gw: TestGateway, nth: number): Promise<string> {
  await gw.mock.waitForCalls(nth, 10_000)
  const rows = await gw.services.store.ledger.openHolds(gw.account.id)
  const id = rows.at(-1)?.requestId
  if (id === undefined) throw new Error('no open hold for the stalled request')
  return id
}

for (const backend of ['sqlite', 'pg'] satisfies Backend[]) {
  t.test(`a client that stops reading (${backend})`, async (t) => {
    const stallMs = 1000
    const config = hostileConfig(stallMs)
    t.teardown(config.remove)
    const gw = await startTestGateway({ configFile: config.file, backend })
    t.teardown(() => gw.close())
    const price = priceOf(MODEL, config.raw)

    t.test('is cut after the stall bound and billed in full while it is still paused', async (t) => {
      gw.mock.once({ chunks: OUTPUT_TOKENS })
      const client = await stalledClient(gw)
      t.teardown(() => { client.socket.destroy() })
      const requestId = await requestIdOf(gw, gw.mock.calls.length + 1)
      const started = Date.now()
      // The client pauses 7 s; the request must settle before that, on the upstream's usage.
      const row = await settledRow(gw, requestId, CLIENT_PAUSE_MS - 1000)
      const call = gw.mock.calls.at(-1)
      t.equal(call?.produced?.outputTokens, OUTPUT_TOKENS, 'the provider produced 3,000,000 tokens')
      const cost = expectedCost(price, { inputTokens: call?.reported?.inputTokens ?? 0, outputTokens: OUTPUT_TOKENS })
      t.match(row, { outcome: 'client_disconnected', errorCode: 'REQUEST_TIMEOUT', billingStatus: 'BILLED', usageReported: true, cost })
      t.equal(row.usage?.outputTokens, OUTPUT_TOKENS, 'the usage the provider reported at the end of its answer')
      const ledger = await ledgerState(gw)
      t.equal(ledger.openHolds, 0, 'no hold left open')
      t.ok(ledger.charges.some((e) => e.requestId === requestId && -e.amount === cost), 'the charge is posted in the ledger')
      t.ok(client.received().length < 12_000_000, `the client was cut before it read the answer (it read ${client.received().length} bytes)`)
      t.comment(`settled ${Date.now() - started} ms after the upstream answered (stall bound ${stallMs} ms)`)
    })

    t.test('two stalled clients on a pool of 2 connections do not hold up a third request', async (t) => {
      gw.mock.once({ chunks: OUTPUT_TOKENS })
      gw.mock.once({ chunks: OUTPUT_TOKENS })
      const before = gw.mock.calls.length
      const a = await stalledClient(gw)
      const b = await stalledClient(gw)
      t.teardown(() => { a.socket.destroy(); b.socket.destroy() })
      await gw.mock.waitForCalls(before + 2, 10_000)
      const started = Date.now()
      // Both upstream connections carry a stalled answer now; the stalled clients stay paused
      // for 7 s, and this request must be answered well before (the probe hung > 12 s).
      const res = await fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { ...gw.auth, 'content-type': 'application/json' },
        body: JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: 'hello' }] }),
        signal: AbortSignal.timeout(CLIENT_PAUSE_MS - 1000)
      })
      t.equal(res.status, 200)
      t.match(await res.json(), { object: 'chat.completion' })
      const waited = Date.now() - started
      t.ok(waited < CLIENT_PAUSE_MS - 1000, `answered after ${waited} ms, while both stalled clients were still paused`)
      t.equal(a.received().length < 12_000_000 && b.received().length < 12_000_000, true, 'the stalled clients were cut')
    })
  })

  t.test(`a client that pauses under the stall bound, past its hold's TTL (${backend})`, async (t) => {
    const config = hostileConfig(CLIENT_PAUSE_MS + 5000)
    t.teardown(config.remove)
    const gw = await startTestGateway({ configFile: config.file, backend })
    t.teardown(() => gw.close())
    gw.mock.once({ chunks: OUTPUT_TOKENS })
    const client = await stalledClient(gw)
    t.teardown(() => { client.socket.destroy() })
    const requestId = await requestIdOf(gw, 1)
    // 7 s paused: the 4 s hold would have expired and been reaped without its renewals.
    await new Promise((resolve) => setTimeout(resolve, CLIENT_PAUSE_MS))
    t.equal((await gw.services.store.ledger.openHolds(gw.account.id)).length, 1, 'the hold is still open after 7 s (renewed)')
    client.socket.resume()
    const answer = await answerOn(client, 20_000)
    t.equal(answer?.status, 200)
    t.equal(answer?.body.length, Number(answer?.headers['content-length']), 'the client got the whole answer')
    const row = await settledRow(gw, requestId)
    const call = gw.mock.calls.at(-1)
    const cost = expectedCost(priceOf(MODEL, config.raw), { inputTokens: call?.reported?.inputTokens ?? 0, outputTokens: OUTPUT_TOKENS })
    t.match(row, { outcome: 'completed', billingStatus: 'BILLED', usageReported: true, cost })
    const ledger = await ledgerState(gw)
    t.equal(ledger.openHolds, 0)
    t.ok(ledger.charges.some((e) => e.requestId === requestId && -e.amount === cost), 'posted in full, not expired')
  })
}
