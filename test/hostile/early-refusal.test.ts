// Refusals before the body close the connection, on both stores: a request with no key, an
// invalid key or one over its rate limit, sent with a body that trickles in, is answered at once
// with `Connection: close` and its socket ends within a second (it used to answer keep-alive and
// go on reading the slow body for about 150 s). The admin listener does the same for a call
// without its token. A refusal of a request without a body keeps the connection.
import t from 'tap'
import { startTestGateway, type Backend, type TestGateway } from '../helpers/gateway.js'
import { answerOn, closedWithin, openConnection, requestHead, type RawAnswer } from '../helpers/raw-http.js'

const ADMIN_TOKEN = 'early-refusal-admin-token-0123456789abc'
/** The socket must end this soon after the answer (it used to stay ~150 s). */
const CLOSE_WITHIN_MS = 1000

interface Refused { answer: RawAnswer | null, closedMs: number, bodyBytesSent: number }

/** Sends the headers, then a 100 kB body one byte every 100 ms; measures the answer and the close. */
async function slowBody (gw: TestGateway, path: string, headers: Record<string, string>): Promise<Refused> {
  const conn = await openConnection(gw.url)
  let sent = 0
  const trickle = setInterval(() => {
    if (conn.socket.destroyed || conn.socket.writableEnded) return
    conn.socket.write('{')
    sent++
  }, 100)
  try {
    conn.socket.write(requestHead('POST', path, { 'content-type': 'application/json', 'content-length': 100_000, ...headers }))
    const answer = await answerOn(conn, 5000)
    const answeredAt = Date.now()
    const closed = await closedWithin(conn, CLOSE_WITHIN_MS * 5)
    return { answer, closedMs: closed ? Date.now() - answeredAt : Number.POSITIVE_INFINITY, bodyBytesSent: sent }
  } finally {
    clearInterval(trickle)
    conn.socket.destroy()
  }
}

for (const backend of ['sqlite', 'pg'] satisfies Backend[]) {
  t.test(`refusals before the body close the connection (${backend})`, async (t) => {
    const gw = await startTestGateway({ backend, server: { adminToken: ADMIN_TOKEN }, limits: { default_tier: 'one', tiers: { one: { rank: 0, requests_per_minute: 1, concurrent_streams: 1, overdraft: '0' } } } })
    t.teardown(() => gw.close())

    const cases: Array<{ what: string, path: string, headers: Record<string, string>, status: number, code: string }> = [
      { what: 'no key', path: '/v1/chat/completions', headers: {}, status: 401, code: 'AUTH_API_KEY_REQUIRED' },
      { what: 'an invalid key', path: '/v1/messages', headers: { 'x-api-key': 'sk-not-a-real-key' }, status: 401, code: 'AUTH_INVALID_API_KEY' },
      { what: 'no admin token (admin API)', path: '/admin/v1/accounts', headers: {}, status: 401, code: 'AUTH_REQUIRED' },
      { what: 'a wrong admin token (admin API)', path: '/admin/v1/accounts', headers: { authorization: 'Bearer wrong-token' }, status: 403, code: 'AUTH_FORBIDDEN' }
    ]
    for (const c of cases) {
      const r = await slowBody(gw, c.path, c.headers)
      t.equal(r.answer?.status, c.status, `${c.what}: ${c.status}`)
      t.equal(r.answer?.headers['x-gateway-error-code'], c.code, `${c.what}: ${c.code}`)
      t.equal(r.answer?.headers.connection, 'close', `${c.what}: Connection: close`)
      t.ok(r.closedMs <= CLOSE_WITHIN_MS, `${c.what}: the socket ended ${r.closedMs} ms after the answer (≤ ${CLOSE_WITHIN_MS} ms), ${r.bodyBytesSent} of 100000 body bytes sent`)
    }

    // Over the rate limit (1 rpm): the second request of the minute, refused at admission.
    const first = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { ...gw.auth, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }) })
    t.equal(first.status, 200, 'the first request of the minute is served')
    await first.arrayBuffer()
    const limited = await slowBody(gw, '/v1/chat/completions', gw.auth)
    t.equal(limited.answer?.status, 429, 'over the rate: 429')
    t.equal(limited.answer?.headers.connection, 'close', 'over the rate: Connection: close')
    t.ok(limited.closedMs <= CLOSE_WITHIN_MS, `over the rate: the socket ended ${limited.closedMs} ms after the answer`)

    // A refusal of a request without a body leaves nothing unread: the connection is kept.
    const conn = await openConnection(gw.url)
    t.teardown(() => { conn.socket.destroy() })
    conn.socket.write(requestHead('GET', '/v1/videos/video_123', {}))
    const bodyless = await answerOn(conn, 5000)
    t.equal(bodyless?.status, 401, 'no key, no body: 401')
    t.not(bodyless?.headers.connection, 'close', 'the connection is kept alive (nothing was left unread)')
    t.notOk(await closedWithin(conn, 300), 'and stays open')
  })
}
