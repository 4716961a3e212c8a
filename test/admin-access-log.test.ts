// The admin API's audit trail: one access-log line per admin call (method, route, ids, status,
// code, time, address), refused ones included; never the admin token, a key, a body or an amount.
import { Writable } from 'node:stream'
import t from 'tap'
import { ADMIN_ACCESS_LOG_MESSAGE } from '../plugins/apps/admin/route-hooks.js'
import { startTestGateway } from './helpers/gateway.js'
import { writeTestConfig } from './helpers/test-config.js'

const ADMIN_TOKEN = 'admin-log-token-0123456789abcdefghijklmn'

interface Line { msg: string, level: number, requestId?: string, method?: string, route?: string | null, ids?: Record<string, string> | null, status?: number, code?: string | null, totalMs?: number, address?: string }

t.test('one line per admin call, with what an audit needs and nothing secret', async (t) => {
  let output = ''
  const stream = new Writable({ write (chunk: Buffer, _enc, done) { output += chunk.toString(); done() } })
  const gw = await startTestGateway({ server: { adminToken: ADMIN_TOKEN, logger: { level: 'info', stream } } })
  t.teardown(() => gw.close())
  const call = async (method: string, path: string, body?: unknown, token = ADMIN_TOKEN): Promise<Response> =>
    await fetch(`${gw.url}/admin/v1${path}`, { method, headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) })

  const account = await (await call('POST', '/accounts', { name: 'audited' })).json() as { id: string }
  const credit = await call('POST', `/accounts/${account.id}/credits`, { amount: '25.00', note: 'invoice 42' })
  const balance = (await credit.json() as { balance: string }).balance
  const created = await (await call('POST', `/accounts/${account.id}/keys`, { name: 'audited key' })).json() as { id: string, key: string }
  const revealed = await (await call('GET', `/keys/${created.id}/reveal`)).json() as { key: string }
  await (await call('POST', `/keys/${created.id}/revoke`)).arrayBuffer()
  await (await call('GET', '/accounts?limit=1001')).arrayBuffer()
  await (await call('GET', '/accounts', undefined, 'not-the-token-0123456789abcdefghijklmnop')).arrayBuffer()
  await (await call('GET', '/no-such-route')).arrayBuffer()
  // Public requests are not admin calls: the gateway's own access line covers them.
  await (await fetch(`${gw.url}/v1/models`)).arrayBuffer()

  // The line is written after the answer: wait until every call has one.
  const lines = async (): Promise<Line[]> => {
    const deadline = Date.now() + 5000
    for (;;) {
      const found = output.split('\n').flatMap((l) => { try { return [JSON.parse(l) as Line] } catch { return [] } }).filter((l) => l.msg === ADMIN_ACCESS_LOG_MESSAGE)
      if (found.length >= 8 || Date.now() > deadline) return found
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
  }
  const log = await lines()
  t.equal(log.length, 8, 'one line per admin call, no more')
  t.same(log.map((l) => [l.method, l.route, l.status]), [
    ['POST', '/admin/v1/accounts', 201],
    ['POST', '/admin/v1/accounts/:id/credits', 200],
    ['POST', '/admin/v1/accounts/:id/keys', 201],
    ['GET', '/admin/v1/keys/:id/reveal', 200],
    ['POST', '/admin/v1/keys/:id/revoke', 200],
    ['GET', '/admin/v1/accounts', 400],
    ['GET', '/admin/v1/accounts', 403],
    ['GET', null, 404]
  ], 'method, route and status of each call, refusals included')
  t.same(log.map((l) => l.ids), [{}, { id: account.id }, { id: account.id }, { id: created.id }, { id: created.id }, {}, {}, null], 'the ids in each path (what was acted on)')
  t.same(log.map((l) => l.code), [null, null, null, null, null, 'REQUEST_INVALID', 'AUTH_FORBIDDEN', 'REQUEST_ROUTE_NOT_FOUND'], 'the error code of a refusal')
  t.ok(log.every((l) => typeof l.requestId === 'string' && typeof l.totalMs === 'number' && l.totalMs >= 0 && l.address === '127.0.0.1'), 'request id, time and address on every line')

  for (const [what, secret] of [['the admin token', ADMIN_TOKEN], ['the wrong token', 'not-the-token-0123456789'], ['the key', created.key], ['the revealed key', revealed.key], ['the credited amount', '25.00'], ['the balance', balance], ['the note', 'invoice 42']] as const) {
    t.notOk(output.includes(secret), `the log holds nothing of ${what}`)
  }
})

t.test('observability.access_log.enabled false: no admin line either', async (t) => {
  let output = ''
  const stream = new Writable({ write (chunk: Buffer, _enc, done) { output += chunk.toString(); done() } })
  const cfg = writeTestConfig((c) => { (c.observability as { access_log: { enabled: boolean } }).access_log.enabled = false })
  t.teardown(cfg.remove)
  const gw = await startTestGateway({ configFile: cfg.file, server: { adminToken: ADMIN_TOKEN, logger: { level: 'info', stream } } })
  t.teardown(() => gw.close())
  const res = await fetch(`${gw.url}/admin/v1/tiers`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
  t.equal(res.status, 200, 'the call is answered')
  await res.arrayBuffer()
  await new Promise((resolve) => setTimeout(resolve, 100))
  t.notOk(output.includes(ADMIN_ACCESS_LOG_MESSAGE), 'and not logged')
})
