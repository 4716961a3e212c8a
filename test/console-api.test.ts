// The console API where one store is enough: closed sign-up, a console turned off, and the page's
// headers. The whole API on each store: console-api-sqlite.test.ts, console-api-pg.test.ts.
import t from 'tap'
import { readFileSync } from 'node:fs'
import { startTestGateway } from './helpers/gateway.js'
import { writeTestConfig } from './helpers/test-config.js'
import { consoleClient, PASSWORD, signedInClient, uniqueEmail } from './helpers/console.js'
import { CONSOLE_ADMIN_TOKEN, expectCode } from './helpers/console-api-suite.js'
import { repoPath } from './helpers/paths.js'

t.test('closed sign-up, and a console turned off', async (t) => {
  const closed = writeTestConfig((c) => { (c as unknown as Record<string, Record<string, unknown>>).console = { signup: 'closed' } })
  const off = writeTestConfig((c) => { (c as unknown as Record<string, Record<string, unknown>>).console = { enabled: false } })
  t.teardown(() => { closed.remove(); off.remove() })
  const gwClosed = await startTestGateway({ configFile: closed.file })
  t.teardown(() => gwClosed.close())
  await expectCode(t, await consoleClient(gwClosed.url).call('POST', '/signup', { email: uniqueEmail(), password: PASSWORD }), 403, 'AUTH_SIGNUP_NOT_ALLOWED')
  const gwOff = await startTestGateway({ configFile: off.file })
  t.teardown(() => gwOff.close())
  await expectCode(t, await consoleClient(gwOff.url).call('POST', '/signup', { email: uniqueEmail(), password: PASSWORD }), 404, 'REQUEST_ROUTE_NOT_FOUND')
  const page = await fetch(`${gwOff.url}/console`)
  t.equal(page.status, 404, 'no page either')
  await page.arrayBuffer()
})

t.test('the page: strict CSP, no inline script, no secret', async (t) => {
  const gw = await startTestGateway()
  t.teardown(() => gw.close())
  const res = await fetch(`${gw.url}/console`)
  t.equal(res.status, 200)
  const csp = res.headers.get('content-security-policy') ?? ''
  t.match(csp, /default-src 'none'/)
  t.match(csp, /script-src 'self'(;|$)/)
  t.notMatch(csp, /unsafe-inline|unsafe-eval/)
  t.match(csp, /frame-ancestors 'none'/)
  const html = await res.text()
  t.notMatch(html, /<script(?![^>]*\bsrc=)[^>]*>/, 'every script is a file')
  t.notMatch(html, /\son[a-z]+=/i, 'no inline event handler')
  t.notMatch(html, /style=/, 'no inline style')
  for (const asset of ['/console/assets/app.js', '/console/assets/app.css']) {
    const a = await fetch(`${gw.url}${asset}`)
    t.equal(a.status, 200, asset)
    const text = await a.text()
    t.notOk(text.includes(gw.key) || text.includes('GATEWAY_SECRET'), `${asset}: no secret`)
  }
  const source = readFileSync(repoPath('plugins', 'apps', 'console', 'page', 'app.js'), 'utf8')
  t.notMatch(source, /innerHTML|insertAdjacentHTML|eval\(|new Function/, 'the script never parses server text as HTML or code')
})

t.test('no trusted proxy (the default): X-Forwarded-Proto and X-Forwarded-For mean nothing', async (t) => {
  const gw = await startTestGateway({ server: { adminToken: CONSOLE_ADMIN_TOKEN } })
  t.teardown(() => gw.close())
  t.same(gw.config.server.trust_proxy, [], 'the shipped gateway.yaml trusts no proxy')
  const user = await signedInClient(gw.url, CONSOLE_ADMIN_TOKEN)
  const c = consoleClient(gw.url, '203.0.113.9')
  const res = await c.call('POST', '/signin', { email: user.email, password: PASSWORD }, { 'x-forwarded-proto': 'https' })
  t.equal(res.status, 200)
  t.notMatch(res.headers.get('set-cookie') ?? '', /Secure/, 'not Secure: the claim of https came from an untrusted peer')
  const sessions = await c.ok<{ data: Array<{ current: boolean, address: string }> }>('GET', '/sessions')
  t.equal(sessions.data.find((s) => s.current)?.address, '127.0.0.1', 'the peer address, not the forwarded one')
})
