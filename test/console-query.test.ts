// Every console route's query string and path parameters are checked by its route schema, on both
// stores, as a hostile account holder would try them: an unknown parameter on every route, bad
// values of every parameter a route names, and path ids carrying a NUL, a newline, bytes that are
// not percent-encoding or too many characters. Each is a 400 REQUEST_INVALID naming it in the
// chat-completions envelope, never a 500 (a NUL in a key id reached PostgreSQL's text parameter).
import t, { type Test } from 'tap'
import { startTestGateway, type Backend } from './helpers/gateway.js'
import { signedInClient, type ConsoleClient } from './helpers/console.js'
import { CONSOLE_ADMIN_TOKEN as ADMIN_TOKEN, consoleTestConfig } from './helpers/console-api-suite.js'

t.setTimeout(120_000)

/** Every route under /console/v1 (the page's routes take no parameter and are checked apart). */
const ROUTES: Array<[method: string, path: string]> = [
  ['POST', '/signup'], ['POST', '/verify'], ['POST', '/verify/resend'], ['POST', '/password/reset'], ['POST', '/password/reset/confirm'],
  ['GET', '/challenge'], ['POST', '/signin'],
  ['GET', '/session'], ['POST', '/signout'], ['GET', '/sessions'], ['DELETE', '/sessions/:id'],
  ['GET', '/keys'], ['POST', '/keys'], ['GET', '/keys/:id'], ['PATCH', '/keys/:id'], ['POST', '/keys/:id/revoke'], ['POST', '/keys/:id/reveal'],
  ['GET', '/wallet'], ['GET', '/ledger'], ['GET', '/requests'], ['GET', '/requests/:id'], ['GET', '/usage'], ['GET', '/models']
]

/** The console API routes Fastify registered, one per method (HEAD left out): each line of its route tree joined to its parents. */
function registeredCount (tree: string): number {
  let n = 0
  const parents: string[] = []
  for (const line of tree.split('\n')) {
    const m = /^([│ ]*)[├└]── (\S+) \(([^)]+)\)/.exec(line)
    if (m === null) continue
    const depth = (m[1] ?? '').length / 4
    parents.length = depth
    const path = parents.join('') + (m[2] ?? '')
    parents.push(m[2] ?? '')
    if (path.startsWith('/console/v1/')) n += (m[3] ?? '').split(', ').filter((x) => x !== 'HEAD').length
  }
  return n
}

async function expect400 (t: Test, res: Response, param: string | null, what: string): Promise<void> {
  const text = await res.text()
  t.equal(res.status, 400, `${what}: 400 (${text.slice(0, 160)})`)
  let body: { error?: { code?: string, param?: string | null } } = {}
  try { body = JSON.parse(text) as typeof body } catch { t.fail(`${what}: not JSON`) }
  t.equal(body.error?.code, 'REQUEST_INVALID', `${what}: REQUEST_INVALID`)
  t.equal(body.error?.param, param, `${what}: names ${String(param)}`)
}

for (const backend of ['sqlite', 'pg'] as Backend[]) {
  t.test(`every console route refuses a bad query parameter or path id with a 400 naming it (${backend})`, async (t) => {
    const cfg = consoleTestConfig()
    t.teardown(cfg.remove)
    const gw = await startTestGateway({ backend, configFile: cfg.file, server: { adminToken: ADMIN_TOKEN } })
    t.teardown(() => gw.close())
    t.equal(registeredCount(gw.app.printRoutes({ commonPrefix: false })), ROUTES.length, `the list covers every console API route Fastify registered (${ROUTES.length})`)
    const a: ConsoleClient = await signedInClient(gw.url, ADMIN_TOKEN)

    for (const [method, path] of ROUTES) {
      const params = [...path.matchAll(/:([a-z]+)/g)].map((m) => m[1] as string)
      const fill = (bad: string | null, value: string): string => path.replace(/:([a-z]+)/g, (_, name: string) => name === bad ? value : 'x1')
      for (const p of params) {
        for (const [bad, what] of [['%00', 'a NUL'], ['a%0Ab', 'a newline'], ['%7F', 'a DEL']] as const) {
          await expect400(t, await a.call(method, fill(p, bad)), p, `${method} ${path} with ${what} in ${p}`)
        }
        // Refused by the public listener's router before any route (Fastify's maxParamLength, 100): no param to name.
        for (const [bad, what] of [['%FF', 'bytes that are not UTF-8'], ['k'.repeat(101), '101 characters']] as const) {
          await expect400(t, await a.call(method, fill(p, bad)), null, `${method} ${path} with ${what} in ${p}`)
        }
      }
      await expect400(t, await a.call(method, `${fill(null, '')}?bogus=1`), 'bogus', `${method} ${path}?bogus=1`)
    }

    // The values of every parameter the read routes name.
    const cases: Array<[string, string]> = []
    for (const bad of ['0', '-1', 'abc', '1.5', '', '10000000', '1e3']) {
      cases.push([`/ledger?limit=${bad}`, 'limit'], [`/requests?limit=${bad}`, 'limit'])
    }
    cases.push(['/ledger?limit=201', 'limit'], ['/requests?limit=1001', 'limit'])
    for (const bad of ['0', '91', 'x', '', '1.5']) cases.push([`/usage?days=${bad}`, 'days'])
    for (const name of ['before', 'from', 'to']) {
      for (const bad of ['%00', 'a%0Ab', 'x'.repeat(401), '2026-13-45']) cases.push([`/requests?${name}=${bad}`, name])
    }
    cases.push(['/ledger?before=%00', 'before'], ['/ledger?before=a%0Ab', 'before'], [`/ledger?before=${'x'.repeat(401)}`, 'before'])
    for (const name of ['model', 'outcome', 'key_id']) {
      for (const bad of ['%00', 'a%0Ab', 'x'.repeat(401)]) cases.push([`/requests?${name}=${bad}`, name])
      cases.push([`/requests?${name}=a&${name}=b`, name])
    }
    for (const [path, param] of cases) await expect400(t, await a.call('GET', path), param, `GET ${path.slice(0, 60)}`)

    // Sane values still answer.
    for (const path of ['/ledger?limit=200', '/requests?limit=1000&model=openai/gpt-4o&outcome=success', '/usage?days=90', `/requests?from=${new Date(Date.now() - 86_400_000).toISOString()}`]) {
      const res = await a.call('GET', path)
      t.equal(res.status, 200, `GET ${path}: 200`)
      await res.arrayBuffer()
    }
  })
}
