// Hostile connections, on both stores: a slow upload (1 byte every 4 s kept a connection over
// 100 s), headers trickled in, a connection that never says anything, an idle keep-alive one,
// and one address opening more connections than it may. Small configured bounds keep it fast.
import t from 'tap'
import { startTestGateway, type Backend } from '../helpers/gateway.js'
import { ledgerState } from '../helpers/billing.js'
import { answerOn, closedWithin, openConnection, requestHead } from '../helpers/raw-http.js'
import { writeTestConfig } from '../helpers/test-config.js'

const REQUEST_TIMEOUT_MS = 1000
const HEADERS_TIMEOUT_MS = 1000
const KEEP_ALIVE_MS = 500
const MAX_CONNECTIONS = 3
/** Slack over a bound for the sweep that enforces it and a loaded test machine. */
const SLACK_MS = 2500

for (const backend of ['sqlite', 'pg'] satisfies Backend[]) {
  t.test(`server timeouts (${backend})`, async (t) => {
    const config = writeTestConfig((c) => {
      c.server.request_timeout_ms = REQUEST_TIMEOUT_MS
      c.server.headers_timeout_ms = HEADERS_TIMEOUT_MS
      c.server.keep_alive_timeout_ms = KEEP_ALIVE_MS
    })
    t.teardown(config.remove)
    const gw = await startTestGateway({ backend, configFile: config.file })
    t.teardown(() => gw.close())

    t.test('a body sent 1 byte every 4 s answers REQUEST_TIMEOUT and its connection is closed', async (t) => {
      const conn = await openConnection(gw.url)
      t.teardown(() => { conn.socket.destroy() })
      conn.socket.write(requestHead('POST', '/v1/chat/completions', { ...gw.auth, 'content-type': 'application/json', 'content-length': 100 }))
      conn.socket.write('{')
      const trickle = setInterval(() => { if (!conn.socket.destroyed) conn.socket.write(' ') }, 4000)
      t.teardown(() => { clearInterval(trickle) })
      const answer = await answerOn(conn, REQUEST_TIMEOUT_MS + SLACK_MS)
      t.equal(answer?.status, 408)
      t.equal(answer?.headers['x-gateway-error-code'], 'REQUEST_TIMEOUT')
      t.equal(answer?.headers['x-gateway-billed'], 'false')
      t.equal(answer?.headers.connection, 'close')
      t.match(JSON.parse(answer?.body.toString('utf8') ?? '{}'), { error: { code: 'REQUEST_TIMEOUT', retry: { retryable: true } } })
      t.ok(await closedWithin(conn, SLACK_MS), 'the gateway closed the connection')
      t.equal(gw.mock.calls.length, 0, 'nothing forwarded')
      t.equal((await ledgerState(gw)).openHolds, 0, 'nothing held')
    })

    t.test('headers trickled in are cut at the headers deadline', async (t) => {
      const conn = await openConnection(gw.url)
      t.teardown(() => { conn.socket.destroy() })
      conn.socket.write('POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\nx-slow: ')
      const trickle = setInterval(() => { if (!conn.socket.destroyed) conn.socket.write('a') }, 200)
      t.teardown(() => { clearInterval(trickle) })
      t.ok(await closedWithin(conn, HEADERS_TIMEOUT_MS + SLACK_MS), 'closed')
    })

    t.test('a connection that never sends a byte is closed', async (t) => {
      const conn = await openConnection(gw.url)
      t.teardown(() => { conn.socket.destroy() })
      t.ok(await closedWithin(conn, HEADERS_TIMEOUT_MS + SLACK_MS), 'closed')
    })

    t.test('an idle keep-alive connection is closed after keep_alive_timeout_ms', async (t) => {
      const conn = await openConnection(gw.url)
      t.teardown(() => { conn.socket.destroy() })
      const body = JSON.stringify({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] })
      conn.socket.write(requestHead('POST', '/v1/chat/completions', { ...gw.auth, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }) + body)
      const answer = await answerOn(conn, 5000)
      t.equal(answer?.status, 200, 'served, and kept alive')
      t.ok(await closedWithin(conn, KEEP_ALIVE_MS + SLACK_MS), 'then closed once idle')
    })
  })

  t.test(`connections per client address are capped (${backend})`, async (t) => {
    const config = writeTestConfig((c) => { c.server.max_connections_per_address = MAX_CONNECTIONS })
    t.teardown(config.remove)
    const gw = await startTestGateway({ backend, configFile: config.file })
    t.teardown(() => gw.close())
    const held = await Promise.all(Array.from({ length: MAX_CONNECTIONS }, async () => await openConnection(gw.url)))
    t.teardown(() => { for (const c of held) c.socket.destroy() })
    const body = JSON.stringify({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] })
    const request = requestHead('POST', '/v1/chat/completions', { ...gw.auth, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }) + body

    t.test('one more answers LIMIT_RATE_EXCEEDED in the envelope, and is closed', async (t) => {
      const extra = await openConnection(gw.url)
      t.teardown(() => { extra.socket.destroy() })
      extra.socket.write(request)
      const answer = await answerOn(extra, 5000)
      t.equal(answer?.status, 429)
      t.equal(answer?.headers['x-gateway-error-code'], 'LIMIT_RATE_EXCEEDED')
      t.equal(answer?.headers['retry-after'], '1')
      t.equal(answer?.headers.connection, 'close')
      t.match(JSON.parse(answer?.body.toString('utf8') ?? '{}'), { error: { code: 'LIMIT_RATE_EXCEEDED', billing: { status: 'NOT_BILLED' } } })
      t.ok(await closedWithin(extra, SLACK_MS), 'closed')
      t.equal(gw.mock.calls.length, 0, 'nothing forwarded')
    })

    t.test('the connections within the cap are served, and a freed slot is usable again', async (t) => {
      const first = held[0]
      if (first === undefined) throw new Error('no connection')
      first.socket.write(request)
      t.equal((await answerOn(first, 5000))?.status, 200, 'a connection within the cap')
      first.socket.destroy()
      await first.closed
      const again = await openConnection(gw.url)
      t.teardown(() => { again.socket.destroy() })
      again.socket.write(request)
      t.equal((await answerOn(again, 5000))?.status, 200, 'a new connection after one closed')
    })
  })
}
