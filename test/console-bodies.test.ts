// Every field a client sends to the console and to the admin API's account and key routes, as a
// hostile client sends it: bodies that are not objects, fields of the wrong type, NUL and other
// control characters, oversize values, unknown fields and prototype keys. Each is refused with a
// 4xx catalogue code in its envelope (the code header matching the body), on both stores; none is
// a 500 (a NUL in a credit's note reached PostgreSQL's text column and answered 500).
import t, { type Test } from 'tap'
import { startTestGateway, type Backend } from './helpers/gateway.js'
import { consoleClient, signedInClient, uniqueEmail } from './helpers/console.js'
import { CONSOLE_ADMIN_TOKEN as ADMIN_TOKEN, consoleTestConfig } from './helpers/console-api-suite.js'

t.setTimeout(120_000)

const NUL = '\u0000'

/** Bodies for the open routes (sign-up, verification, reset, sign-in): none is a valid request. */
function openBodies (): unknown[] {
  return [
    null, [], 'str', 123, true, {}, { email: {} }, { email: `a${NUL}b@example.org`, password: 'correct horse battery' },
    { email: 'ann@[127.0.0.1]', password: 'correct horse battery', code: '123456' }, { email: '"a b"@example.org', password: 'correct horse battery', code: '123456' },
    { email: uniqueEmail(), password: 12345678901, code: 123456 }, { email: uniqueEmail(), password: ['correct horse battery'], code: ['123456'] },
    { email: uniqueEmail(), password: 'short', code: `12${NUL}456` }, { email: uniqueEmail(), password: 'x'.repeat(2000), code: '1'.repeat(10_000) },
    { email: uniqueEmail(), password: 'whatever password', code: '123456', human_check: 'x' },
    { email: uniqueEmail(), password: 'whatever password', code: '123456', human_check: { challenge: NUL, solution: NUL } },
    { email: uniqueEmail(), password: 'whatever password', code: '123456', human_check: { challenge: 'a'.repeat(10_000), solution: 1 } }
  ]
}

/** Key settings (console POST/PATCH /keys, admin key routes): none is valid. */
const KEY_BODIES: unknown[] = [
  null, [], 'x', { name: `a${NUL}b` }, { name: 'x'.repeat(5000) }, { name: 'k', tags: [`t${NUL}`] }, { name: 'k', expires_at: 'garbage' },
  { name: 'k', expires_at: `2030${NUL}` }, { name: 'k', timezone: `Europe/${NUL}` }, { name: 'k', timezone: 'Mars/Base' }, { name: 'k', allowed_models: [`m${NUL}`] },
  { name: 'k', rate_limit_policy: `x${NUL}` }, { name: 'k', quota: '-1' }, { name: 'k', quota: '1e9' }, { name: 'k', daily_image_cap: -1 },
  { name: 'k', daily_image_cap: 1.5 }, { name: 'k', account_id: 'acct_other' }, JSON.parse('{"name":"k","__proto__":{"x":1}}'),
  { name: 'k', constructor: { prototype: { polluted: 1 } } }, { name: 'k', active: 'yes' }
]

async function refused (t: Test, res: Response, what: string): Promise<void> {
  const text = await res.text()
  t.ok(res.status >= 400 && res.status < 500, `${what}: ${res.status} (${text.slice(0, 120)})`)
  let code: unknown
  try { code = (JSON.parse(text) as { error?: { code?: unknown } }).error?.code } catch { code = undefined }
  t.ok(typeof code === 'string' && code === res.headers.get('x-gateway-error-code'), `${what}: a catalogue code (${String(code)})`)
}

for (const backend of ['sqlite', 'pg'] as Backend[]) {
  t.test(`hostile bodies on the console and the admin API are 4xx catalogue codes, never a 500 (${backend})`, async (t) => {
    // Budgets out of the way: what is measured is each body's answer, not the throttles.
    const cfg = consoleTestConfig({ signups_per_address_per_hour: 1000, mails_per_email_per_hour: 100, mail_requests_per_address_per_hour: 1000, code_guesses_per_email_per_hour: 100, signin_max_failures: 1000, signin_max_failures_per_email: 1000, human_check_after_failures: 900 })
    t.teardown(cfg.remove)
    const gw = await startTestGateway({ backend, configFile: cfg.file, server: { adminToken: ADMIN_TOKEN } })
    t.teardown(() => gw.close())
    const a = await signedInClient(gw.url, ADMIN_TOKEN)
    const key = await a.ok<{ id: string }>('POST', '/keys', { name: 'k' })

    for (const path of ['/signup', '/verify', '/verify/resend', '/password/reset', '/password/reset/confirm', '/signin']) {
      for (const body of openBodies()) {
        // Resend and reset answer 202 to any well-formed address: only the malformed ones are sent there.
        const email = (body as { email?: unknown } | null)?.email
        if ((path === '/verify/resend' || path === '/password/reset') && typeof email === 'string' && !email.includes(NUL) && !email.includes('[') && !email.includes('"')) continue
        // Sign-up reads no human check: those bodies are good sign-ups.
        if (path === '/signup' && (body as { human_check?: unknown } | null)?.human_check !== undefined) continue
        await refused(t, await consoleClient(gw.url).call('POST', path, body), `POST ${path} ${JSON.stringify(body)?.slice(0, 60)}`)
      }
    }
    for (const body of KEY_BODIES) {
      await refused(t, await a.call('POST', '/keys', body), `console POST /keys ${JSON.stringify(body).slice(0, 60)}`)
      await refused(t, await a.call('PATCH', `/keys/${key.id}`, body), `console PATCH /keys/:id ${JSON.stringify(body).slice(0, 60)}`)
    }
    for (const [type, body] of [['application/json', '{'], ['text/plain', '{}'], ['application/x-www-form-urlencoded', 'email=a']] as const) {
      await refused(t, await fetch(`${gw.url}/console/v1/signup`, { method: 'POST', headers: { 'content-type': type }, body }), `POST /signup as ${type}`)
    }

    const admin = async (method: string, path: string, body: unknown): Promise<Response> =>
      await fetch(`${gw.url}/admin/v1${path}`, { method, headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' }, body: JSON.stringify(body) })
    await refused(t, await admin('POST', '/accounts', { name: `a${NUL}b` }), 'admin POST /accounts, a NUL in name')
    await refused(t, await admin('PATCH', `/accounts/${a.accountId}`, { name: `a${NUL}b` }), 'admin PATCH /accounts/:id, a NUL in name')
    for (const body of KEY_BODIES) {
      await refused(t, await admin('POST', `/accounts/${a.accountId}/keys`, body), `admin POST /accounts/:id/keys ${JSON.stringify(body).slice(0, 60)}`)
      await refused(t, await admin('PATCH', `/keys/${key.id}`, body), `admin PATCH /keys/:id ${JSON.stringify(body).slice(0, 60)}`)
    }
    await refused(t, await admin('POST', `/accounts/${a.accountId}/keys/import-legacy`, { name: 'l', key: `gw_live_${NUL}abcdefabcdefabcdef` }), 'admin import-legacy, a NUL in key')
    await refused(t, await admin('POST', `/accounts/${a.accountId}/keys/import-legacy`, { name: `l${NUL}`, key: 'gw_live_abcdefabcdefabcdef12' }), 'admin import-legacy, a NUL in name')
    for (const note of [`n${NUL}`, 'a\nb', 'x'.repeat(501)]) {
      const res = await admin('POST', `/accounts/${a.accountId}/credits`, { amount: '1.00', note })
      t.equal(res.status, 400, `admin credit with note ${JSON.stringify(note.slice(0, 10))}: 400`)
      t.match(await res.json(), { error: { code: 'REQUEST_INVALID', param: 'note' } }, 'REQUEST_INVALID naming note')
    }
    t.match(await (await gw.services.store.ledger.wallet(a.accountId)), { balance: 0n }, 'no refused credit reached the ledger')
  })
}
