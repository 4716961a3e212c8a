// Every admin route's query string and path parameters are checked by its route schema, on both
// stores: a bad value is a 400 REQUEST_INVALID naming it, in the admin envelope, never a 500
// (`GET /admin/v1/accounts?limit=1000` used to answer 500: the store was asked for 1001 rows).
import t, { type Test } from 'tap'
import { buildAdminServer } from '../plugins/apps/server/admin-server.js'
import { MAX_PAGE_LIMIT } from '../plugins/apps/admin/index.js'
import { startTestGateway, type Backend } from './helpers/gateway.js'
import { startReloadGateway, ADMIN_TOKEN as RELOAD_ADMIN_TOKEN } from './helpers/reload.js'

t.setTimeout(120_000)

const ADMIN_TOKEN = 'admin-query-token-0123456789abcdefghijkl'

interface Route {
  method: string
  path: string
  /** No body: an unknown query parameter is the first thing its schemas refuse. */
  bodyless: boolean
}

/** Every admin route of a gateway with an admin token (serve's admin listener adds /config/reload and /instances, below). */
const ROUTES: Route[] = [
  ['POST', '/accounts', false], ['GET', '/accounts', true], ['GET', '/accounts/:id', true], ['PATCH', '/accounts/:id', false],
  ['POST', '/accounts/:id/keys', false], ['GET', '/accounts/:id/keys', true], ['POST', '/accounts/:id/keys/import-legacy', false],
  ['POST', '/accounts/:id/credits', false], ['GET', '/accounts/:id/wallet', true],
  ['GET', '/keys/:id', true], ['PATCH', '/keys/:id', false], ['POST', '/keys/:id/revoke', true], ['GET', '/keys/:id/reveal', true],
  ['GET', '/keys/:id/usage', true], ['POST', '/keys/:id/usage/reset', true],
  ['GET', '/images/pause', true], ['POST', '/images/pause', true], ['DELETE', '/images/pause', true],
  ['GET', '/models', true], ['GET', '/models/:id', true], ['DELETE', '/models/:id/status', true],
  ['GET', '/models/:provider/:name', true], ['DELETE', '/models/:provider/:name/status', true],
  ...['publish', 'pause', 'retire', 'unpublish'].flatMap((a): Array<[string, string, boolean]> => [['POST', `/models/:id/${a}`, true], ['POST', `/models/:provider/:name/${a}`, true]]),
  ['GET', '/tiers', true], ['GET', '/requests', true], ['GET', '/readyz', true], ['GET', '/upstreams', true], ['GET', '/console/outbox', true]
].map(([method, path, bodyless]) => ({ method: method as string, path: path as string, bodyless: bodyless as boolean }))

/** The admin routes Fastify registered, one per method (HEAD left out), read from its route tree. */
function registeredCount (tree: string): number {
  let n = 0
  let inAdmin = false
  for (const line of tree.split('\n')) {
    const m = /^([│ ]*)[├└]── (\S+) \(([^)]+)\)/.exec(line)
    if (m === null) continue
    if ((m[1] ?? '').length === 0) inAdmin = (m[2] ?? '').startsWith('/admin/')
    if (inAdmin) n += (m[3] ?? '').split(', ').filter((x) => x !== 'HEAD').length
  }
  return n
}

async function expect400 (t: Test, res: Response, param: string, what: string): Promise<void> {
  const text = await res.text()
  t.equal(res.status, 400, `${what}: 400 (${text.slice(0, 160)})`)
  let body: { error?: { code?: string, param?: string | null } } = {}
  try { body = JSON.parse(text) as typeof body } catch { t.fail(`${what}: not JSON`) }
  t.equal(body.error?.code, 'REQUEST_INVALID', `${what}: REQUEST_INVALID`)
  t.equal(body.error?.param, param, `${what}: names ${param}`)
  t.equal(res.headers.get('cache-control'), 'no-store', `${what}: no-store`)
}

for (const backend of ['sqlite', 'pg'] as Backend[]) {
  t.test(`every admin route refuses a bad query parameter or path id with a 400 naming it (${backend})`, async (t) => {
    const gw = await startTestGateway({ backend, server: { adminToken: ADMIN_TOKEN } })
    t.teardown(() => gw.close())
    t.equal(registeredCount(gw.app.printRoutes({ commonPrefix: false })), ROUTES.length, `the list covers every admin route Fastify registered (${ROUTES.length})`)
    const call = async (method: string, path: string): Promise<Response> =>
      await fetch(`${gw.url}/admin/v1${path}`, { method, headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })

    for (const route of ROUTES) {
      const params = [...route.path.matchAll(/:([a-z]+)/g)].map((m) => m[1] as string)
      const fill = (bad: string | null, value: string): string => route.path.replace(/:([a-z]+)/g, (_, name: string) => name === bad ? value : 'x1')
      for (const p of params) {
        await expect400(t, await call(route.method, fill(p, '%00')), p, `${route.method} ${route.path} with a NUL in ${p}`)
        await expect400(t, await call(route.method, fill(p, 'a%0Ab')), p, `${route.method} ${route.path} with a newline in ${p}`)
      }
      if (route.bodyless) await expect400(t, await call(route.method, `${fill(null, '')}?bogus=1`), 'bogus', `${route.method} ${route.path}?bogus=1`)
    }

    // The page sizes: 1..1000 as documented; 1000 itself is a page, not a 500.
    const full = await call('GET', `/accounts?limit=${MAX_PAGE_LIMIT}`)
    t.equal(full.status, 200, `GET /accounts?limit=${MAX_PAGE_LIMIT}: 200 (it answered 500)`)
    t.match(await full.json(), { data: [{ id: gw.account.id }], has_more: false, next_after: null }, 'one account, no more')
    for (const [path, param] of [['/accounts', 'limit'], ['/requests', 'limit'], ['/console/outbox', 'limit']] as const) {
      for (const bad of ['1001', '0', '-1', 'abc', '1.5', '', '10000000']) await expect400(t, await call('GET', `${path}?${param}=${bad}`), param, `GET ${path}?${param}=${bad}`)
      await expect400(t, await call('GET', `${path}?${param}=1&${param}=2`), param, `GET ${path} with ${param} twice`)
    }
    await expect400(t, await call('GET', '/accounts?after=%00'), 'after', 'GET /accounts?after=NUL')
    await expect400(t, await call('GET', '/accounts?after=acct_nosuch'), 'after', 'GET /accounts?after=unknown')
    await expect400(t, await call('GET', '/requests?account_id=%00'), 'account_id', 'GET /requests?account_id=NUL')
    await expect400(t, await call('GET', '/requests?from=yesterday'), 'from', 'GET /requests?from=yesterday')
    await expect400(t, await call('GET', '/requests?to=2026-13-45'), 'to', 'GET /requests?to=2026-13-45')
    await expect400(t, await call('GET', '/requests?before=not-a-cursor'), 'before', 'GET /requests?before=not-a-cursor')
    await expect400(t, await call('GET', `/console/outbox?email=${'a'.repeat(400)}`), 'email', 'GET /console/outbox?email=(400 characters)')

    // Paging still works at the edges: two accounts, pages of one.
    const second = await fetch(`${gw.url}/admin/v1/accounts`, { method: 'POST', headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'second' }) })
    const secondId = (await second.json() as { id: string }).id
    const page1 = await (await call('GET', '/accounts?limit=1')).json() as { data: Array<{ id: string }>, has_more: boolean, next_after: string | null }
    t.match(page1, { data: [{ id: gw.account.id }], has_more: true, next_after: gw.account.id }, 'page 1 of 2')
    const page2 = await (await call('GET', `/accounts?limit=1&after=${page1.next_after ?? ''}`)).json()
    t.match(page2, { data: [{ id: secondId }], has_more: false, next_after: null }, 'page 2 of 2, the last')
  })
}

t.test('serve\'s admin listener: its own routes, a path that is not percent-encoding and an over-long segment, in the admin envelope', async (t) => {
  const gw = await startReloadGateway({ backend: 'sqlite' })
  t.teardown(async () => { await gw.close() })
  const call = async (method: string, path: string): Promise<Response> =>
    await fetch(`${gw.adminUrl}/admin/v1${path}`, { method, headers: { authorization: `Bearer ${RELOAD_ADMIN_TOKEN}` } })
  await expect400(t, await call('GET', '/instances?bogus=1'), 'bogus', 'GET /instances?bogus=1')
  await expect400(t, await call('POST', '/config/reload?bogus=1'), 'bogus', 'POST /config/reload?bogus=1')
  await expect400(t, await call('GET', '/readyz?bogus=1'), 'bogus', 'GET /readyz?bogus=1')
  await expect400(t, await call('GET', '/keys/%FF'), 'path', 'GET /keys/%FF (not percent-encoding)')
  await expect400(t, await call('GET', `/keys/${'k'.repeat(201)}`), 'path', 'GET /keys/(201 characters)')
  const long = await call('GET', `/keys/${'k'.repeat(200)}`)
  t.equal(long.status, 404, 'a 200-character id is read and simply not found')
  await long.arrayBuffer()
})

t.test('buildAdminServer alone refuses the same way', async (t) => {
  const gw = await startTestGateway({})
  t.teardown(() => gw.close())
  const admin = await buildAdminServer({ config: gw.config, store: gw.services.store, token: ADMIN_TOKEN, logger: false })
  t.teardown(() => admin.close())
  await admin.listen({ port: 0, host: '127.0.0.1' })
  const address = admin.server.address()
  if (address === null || typeof address === 'string') throw new Error('no port')
  const res = await fetch(`http://127.0.0.1:${address.port}/admin/v1/accounts?limit=0`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
  await expect400(t, res, 'limit', 'GET /accounts?limit=0')
})
