// The account console's API (/console/v1) on one store: sign-up, verification, sign-in (same
// answer whether or not the email exists, throttled, a proof of work after failures), sessions
// and CSRF, keys of the signed-in account used through the gateway, and isolation: account B's
// session reaches nothing of account A on any registered console route.
import { createHash } from 'node:crypto'
import t from 'tap'
import { startTestGateway, type Backend, type TestGateway } from './gateway.js'
import { writeTestConfig } from './test-config.js'
import { ManualClock } from './store.js'
import { leadingZeroBits } from '../../plugins/apps/console/index.js'
import { consoleClient, humanCheck, outboxCode, PASSWORD, signedInClient, uniqueEmail } from './console.js'

export const CONSOLE_ADMIN_TOKEN = 'console-admin-token-0123456789abcdef'
const ADMIN_TOKEN = CONSOLE_ADMIN_TOKEN

/**
 * The scrypt cost the console tests hash passwords at: 1024/8/1, about 2 ms against the
 * default's 225 ms (2^15/8/3) on the CI machine. The suite hashed 280 passwords at the default,
 * a sixth of its CPU. What the default cost itself does (its hash, a flood of sign-ins waiting
 * for the hasher) is tested at the default: TEST_SCRYPT_COST is only where the cost is not the
 * subject.
 */
export const TEST_SCRYPT_COST = { password_scrypt_n: 1024, password_scrypt_r: 8, password_scrypt_p: 1 } as const

/**
 * Smaller throttle numbers, an easy proof of work and a cheap scrypt, so the test runs them
 * through quickly; 127.0.0.1 is a trusted proxy, so each test client counts as its own address
 * (X-Forwarded-For).
 */
export function consoleTestConfig (overrides: Record<string, unknown> = {}): ReturnType<typeof writeTestConfig> {
  return writeTestConfig((c) => {
    const raw = c as unknown as Record<string, Record<string, unknown>>
    raw.server = { ...raw.server, trust_proxy: ['127.0.0.1'] }
    raw.console = {
      ...raw.console,
      human_check_after_failures: 2,
      human_check_difficulty: 8,
      signin_max_failures: 5,
      signin_max_failures_per_email: 8,
      signin_failure_window_ms: 60000,
      signups_per_address_per_hour: 15,
      code_guesses_per_email_per_hour: 12,
      blocked_email_domains: ['blocked.example'],
      ...TEST_SCRYPT_COST,
      ...overrides
    }
  })
}

export interface ErrorBody { error: { code: string, param: string | null, message: string, request_id: string, reference: string } }

export type Assert = Pick<typeof t, 'equal' | 'ok'>

export async function expectCode (t: Assert, res: Response, status: number, code: string): Promise<ErrorBody> {
  const body = await res.json() as ErrorBody
  t.equal(res.status, status, `${code}: HTTP ${status}`)
  t.equal(body.error?.code, code, `code ${code}`)
  t.equal(res.headers.get('x-gateway-error-code'), code, 'X-Gateway-Error-Code')
  t.equal(res.headers.get('cache-control'), 'no-store', 'no-store')
  return body
}

function chat (gw: TestGateway, key: string, model = 'openai/gpt-4o-mini'): Promise<Response> {
  return fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] })
  })
}

/** The whole console API on one store (one test file per store keeps each under tap's file timeout). */
export function consoleApiSuite (backend: Backend): void {
  t.test(`console API on ${backend}`, async (t) => {
    const configFile = consoleTestConfig()
    t.teardown(configFile.remove)
    const clock = new ManualClock(new Date())
    const gw = await startTestGateway({ backend, configFile: configFile.file, services: { clock }, server: { adminToken: ADMIN_TOKEN } })
    t.teardown(() => gw.close())

    t.test('sign-up refusals: invalid, disposable, short password, already registered', async (t) => {
      const c = consoleClient(gw.url)
      for (const email of ['not-an-email', 'a@b', 'two@@example.org', '', 'x@-bad-.org']) {
        const body = await expectCode(t, await c.call('POST', '/signup', { email, password: PASSWORD }), 400, 'AUTH_EMAIL_INVALID')
        t.equal(body.error.param, 'email')
      }
      await expectCode(t, await c.call('POST', '/signup', { email: 'someone@mailinator.com', password: PASSWORD }), 403, 'AUTH_DISPOSABLE_EMAIL')
      await expectCode(t, await c.call('POST', '/signup', { email: 'someone@sub.mailinator.com', password: PASSWORD }), 403, 'AUTH_DISPOSABLE_EMAIL')
      await expectCode(t, await c.call('POST', '/signup', { email: 'someone@blocked.example', password: PASSWORD }), 403, 'AUTH_DISPOSABLE_EMAIL')
      await expectCode(t, await c.call('POST', '/signup', { email: uniqueEmail(), password: 'short' }), 400, 'REQUEST_INVALID')
      await expectCode(t, await c.call('POST', '/signup', 'a string'), 400, 'REQUEST_INVALID')
      const email = uniqueEmail('dup')
      const res = await c.call('POST', '/signup', { email, password: PASSWORD })
      t.equal(res.status, 201, 'first sign-up accepted')
      await expectCode(t, await c.call('POST', '/signup', { email: email.toUpperCase(), password: PASSWORD }), 409, 'AUTH_EMAIL_ALREADY_REGISTERED')
    })

    t.test('verification: a wrong code, then the outbox code; sign-in waits for it', async (t) => {
      const c = consoleClient(gw.url)
      const email = uniqueEmail('verify')
      await c.ok('POST', '/signup', { email, password: PASSWORD })
      await expectCode(t, await c.call('POST', '/signin', { email, password: PASSWORD }), 403, 'AUTH_EMAIL_NOT_VERIFIED')
      const code = await outboxCode(gw.url, ADMIN_TOKEN, email)
      const wrong = code === '000000' ? '000001' : '000000'
      await expectCode(t, await c.call('POST', '/verify', { email, code: wrong }), 422, 'AUTH_VERIFICATION_CODE_INVALID')
      await expectCode(t, await c.call('POST', '/verify', { email: uniqueEmail('nobody'), code }), 422, 'AUTH_VERIFICATION_CODE_INVALID')
      const verified = await c.ok<{ email: string, verified: boolean, account_id: string }>('POST', '/verify', { email, code })
      t.same({ email: verified.email, verified: verified.verified }, { email, verified: true })
      t.match(verified.account_id, /^acct_/, 'the account exists once the address is verified')
      await expectCode(t, await c.call('POST', '/verify', { email, code }), 422, 'AUTH_VERIFICATION_CODE_INVALID')
      const signin = await c.call('POST', '/signin', { email, password: PASSWORD })
      t.equal(signin.status, 200, 'signed in once verified')
      const cookie = signin.headers.get('set-cookie') ?? ''
      t.match(cookie, /^gw_console=[A-Za-z0-9_-]{43}; /, 'a random session token')
      t.match(cookie, /; HttpOnly/, 'HttpOnly')
      t.match(cookie, /; SameSite=Strict/, 'SameSite=Strict')
      t.match(cookie, /; Path=\/console;/, 'sent to the console only')
      t.notMatch(cookie, /Secure/, 'not Secure over plain http (it is over https)')
    })

    t.test('the verification code is void after too many wrong tries', async (t) => {
      const c = consoleClient(gw.url)
      const email = uniqueEmail('tries')
      await c.ok('POST', '/signup', { email, password: PASSWORD })
      const code = await outboxCode(gw.url, ADMIN_TOKEN, email)
      const wrong = code === '111111' ? '222222' : '111111'
      for (let i = 0; i < gw.config.console.verification_max_attempts; i++) {
        await expectCode(t, await c.call('POST', '/verify', { email, code: wrong }), 422, 'AUTH_VERIFICATION_CODE_INVALID')
      }
      await expectCode(t, await c.call('POST', '/verify', { email, code }), 422, 'AUTH_VERIFICATION_CODE_INVALID')
      t.equal((await c.call('POST', '/verify/resend', { email })).status, 202, 'a new code is sent')
      const fresh = await outboxCode(gw.url, ADMIN_TOKEN, email)
      t.not(fresh, code, 'a new code')
      t.match(await c.ok('POST', '/verify', { email, code: fresh }), { email, verified: true }, 'the new code verifies')
    })

    t.test('AUTH_CREDENTIALS_INVALID: the same answer and about the same time, known email or not', async (t) => {
      const known = await signedInClient(gw.url, ADMIN_TOKEN)
      const c = consoleClient(gw.url)
      const strip = (b: ErrorBody): unknown => ({ ...b.error, request_id: null })
      const wrongPw = await expectCode(t, await c.call('POST', '/signin', { email: known.email, password: 'wrong password!' }), 401, 'AUTH_CREDENTIALS_INVALID')
      const unknown = await expectCode(t, await c.call('POST', '/signin', { email: uniqueEmail('ghost'), password: 'wrong password!' }), 401, 'AUTH_CREDENTIALS_INVALID')
      t.same(strip(wrongPw), strip(unknown), 'identical bodies apart from the request id')
      // Time: an unknown email costs a full scrypt too (a short-cut would answer ~100x faster).
      const time = async (email: string): Promise<number> => {
        const started = process.hrtime.bigint()
        await (await consoleClient(gw.url).call('POST', '/signin', { email, password: 'wrong password!' })).arrayBuffer()
        return Number(process.hrtime.bigint() - started) / 1e6
      }
      const knownTimes: number[] = []
      const unknownTimes: number[] = []
      for (let i = 0; i < 3; i++) {
        // A fresh registered address each time: failures of one address would bring the human check (answered before any hash).
        const email = uniqueEmail('known')
        await consoleClient(gw.url).ok('POST', '/signup', { email, password: PASSWORD })
        knownTimes.push(await time(email))
        unknownTimes.push(await time(uniqueEmail('ghost')))
      }
      const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[1] ?? 0
      const ratio = median(unknownTimes) / median(knownTimes)
      t.ok(ratio > 0.4 && ratio < 2.5, `unknown/known sign-in time ratio ${ratio.toFixed(2)} (known ${median(knownTimes).toFixed(1)} ms, unknown ${median(unknownTimes).toFixed(1)} ms)`)
    })

    t.test('sign-in human check: required after failures, a wrong or forged or reused solution fails', async (t) => {
      const user = await signedInClient(gw.url, ADMIN_TOKEN)
      const c = consoleClient(gw.url)
      const cfg = gw.config.console
      for (let i = 0; i < cfg.human_check_after_failures; i++) {
        await expectCode(t, await c.call('POST', '/signin', { email: user.email, password: 'nope nope nope' }), 401, 'AUTH_CREDENTIALS_INVALID')
      }
      // Even the right password needs the human check now.
      const required = await expectCode(t, await c.call('POST', '/signin', { email: user.email, password: PASSWORD }), 400, 'AUTH_HUMAN_CHECK_REQUIRED')
      t.equal(required.error.param, 'human_check')
      const challenge = await humanCheck(c)
      // A wrong solution: one whose hash misses the difficulty (at the 8 bits of this config a fixed string would pass 1 time in 256).
      let wrong = 0
      while (leadingZeroBits(createHash('sha256').update(`${challenge.challenge}:not-it-${wrong}`).digest()) >= cfg.human_check_difficulty) wrong++
      await expectCode(t, await c.call('POST', '/signin', { email: user.email, password: PASSWORD, human_check: { challenge: challenge.challenge, solution: `not-it-${wrong}` } }), 403, 'AUTH_HUMAN_CHECK_FAILED')
      const forged = challenge.challenge.replace(/^\d+\./, '1.')
      await expectCode(t, await c.call('POST', '/signin', { email: user.email, password: PASSWORD, human_check: { challenge: forged, solution: '0' } }), 403, 'AUTH_HUMAN_CHECK_FAILED')
      // Solved: the right password signs in.
      const ok = await c.call('POST', '/signin', { email: user.email, password: PASSWORD, human_check: challenge })
      t.equal(ok.status, 200, 'a solved challenge with the right password signs in')
      await ok.arrayBuffer()
      // One solution buys one attempt (claimed in the store, so on every instance).
      await expectCode(t, await c.call('POST', '/signin', { email: user.email, password: PASSWORD, human_check: challenge }), 403, 'AUTH_HUMAN_CHECK_FAILED')
    })

    t.test('sessions, CSRF and sign-out', async (t) => {
      const a = await signedInClient(gw.url, ADMIN_TOKEN)
      await expectCode(t, await consoleClient(gw.url).call('GET', '/session'), 401, 'AUTH_REQUIRED')
      const me = await a.ok<{ account: { id: string }, csrf_token: string, session: { id: string } }>('GET', '/session')
      t.equal(me.account.id, a.accountId)
      t.equal(me.csrf_token, a.csrf, 'the CSRF token is the sign-in one')
      // State changes without / with a wrong CSRF token change nothing.
      await expectCode(t, await a.call('POST', '/keys', { name: 'no csrf' }, { 'x-csrf-token': '' }), 403, 'AUTH_CSRF_TOKEN_MISSING')
      await expectCode(t, await a.call('POST', '/keys', { name: 'bad csrf' }, { 'x-csrf-token': 'x'.repeat(64) }), 403, 'AUTH_CSRF_TOKEN_INVALID')
      await expectCode(t, await a.call('POST', '/signout', undefined, { 'x-csrf-token': '' }), 403, 'AUTH_CSRF_TOKEN_MISSING')
      t.same((await a.ok<{ data: unknown[] }>('GET', '/keys')).data, [], 'no key was created')
      // A second session of the same user: listed, revocable from the first.
      const second = consoleClient(gw.url)
      const s2 = await second.ok<{ csrf_token: string, session_id: string }>('POST', '/signin', { email: a.email, password: PASSWORD })
      second.csrf = s2.csrf_token
      t.not(s2.csrf_token, a.csrf, 'each session has its own CSRF token')
      await expectCode(t, await second.call('POST', '/keys', { name: 'x' }, { 'x-csrf-token': a.csrf ?? '' }), 403, 'AUTH_CSRF_TOKEN_INVALID')
      const list = await a.ok<{ data: Array<{ id: string, current: boolean }> }>('GET', '/sessions')
      t.equal(list.data.length, 2, 'two sessions')
      t.same(list.data.filter((s) => s.current).map((s) => s.id), [me.session.id], 'the calling one is marked current')
      const cur = await expectCode(t, await a.call('DELETE', `/sessions/${me.session.id}`), 422, 'AUTH_CURRENT_SESSION_REVOKE_FORBIDDEN')
      t.equal(cur.error.param, 'session_id')
      await expectCode(t, await a.call('DELETE', '/sessions/ses_missing'), 404, 'AUTH_SESSION_NOT_FOUND')
      t.equal((await a.call('DELETE', `/sessions/${s2.session_id}`)).status, 204, 'the other session revoked')
      await expectCode(t, await second.call('GET', '/session'), 401, 'AUTH_REQUIRED')
      // Sign-out ends the session and clears the cookie.
      const out = await a.call('POST', '/signout')
      t.equal(out.status, 204)
      t.match(out.headers.get('set-cookie') ?? '', /^gw_console=; Path=\/console; Max-Age=0/)
      t.equal(a.cookie, null)
      a.cookie = `gw_console=${'A'.repeat(43)}`
      await expectCode(t, await a.call('GET', '/keys'), 401, 'AUTH_REQUIRED')
    })

    t.test('keys of the signed-in account, used through the gateway', async (t) => {
      const a = await signedInClient(gw.url, ADMIN_TOKEN)
      await gw.services.store.ledger.credit({ accountId: a.accountId, amount: 10_000_000_000n, kind: 'topup', postingId: `test:${a.accountId}` })
      const created = await a.ok<{ id: string, key: string, account_id: string }>('POST', '/keys', { name: 'app' })
      t.match(created.key, /^sk-/)
      t.equal(created.account_id, a.accountId)
      const res = await chat(gw, created.key)
      t.equal(res.status, 200, 'the console key calls the gateway')
      await res.arrayBuffer()
      // Guardrails are the admin API's.
      const conf = await expectCode(t, await a.call('POST', '/keys', { name: 'k', allowed_models: ['openai/gpt-99'] }), 400, 'AUTH_API_KEY_CONFIGURATION_INVALID')
      t.equal(conf.error.param, 'allowed_models')
      await expectCode(t, await a.call('POST', '/keys', { name: 'k', rate_limit_policy: 'enterprise' }), 403, 'LIMIT_API_KEY_POLICY_NOT_ALLOWED')
      // Restrict → MODEL_ACCESS_DENIED on another model; deactivate; reactivate; revoke.
      const restricted = await a.ok<{ allowed_models: string[] }>('PATCH', `/keys/${created.id}`, { allowed_models: ['openai/gpt-4o'] })
      t.same(restricted.allowed_models, ['openai/gpt-4o'])
      await expectCode(t, await chat(gw, created.key), 403, 'MODEL_ACCESS_DENIED')
      await a.ok('PATCH', `/keys/${created.id}`, { active: false })
      await expectCode(t, await chat(gw, created.key, 'openai/gpt-4o'), 403, 'AUTH_API_KEY_INACTIVE')
      await a.ok('PATCH', `/keys/${created.id}`, { active: true, allowed_models: null })
      const revealed = await a.ok<{ key: string }>('POST', `/keys/${created.id}/reveal`)
      t.equal(revealed.key, created.key, 'reveal answers the same plaintext')
      clock.advance(gw.config.console.reveal_window_ms + 1000)
      const late = await expectCode(t, await a.call('POST', `/keys/${created.id}/reveal`), 403, 'AUTH_FORBIDDEN')
      t.match(late.error.message, /recent sign-in/)
      // Past the reveal window a new key's plaintext is refused too (the stale session made none).
      const before = (await a.ok<{ data: unknown[] }>('GET', '/keys')).data.length
      const stale = await expectCode(t, await a.call('POST', '/keys', { name: 'from a stale session' }), 403, 'AUTH_FORBIDDEN')
      t.match(stale.error.message, /Creating a key needs a recent sign-in/)
      t.equal((await a.ok<{ data: unknown[] }>('GET', '/keys')).data.length, before, 'no key was created')
      const fresh = consoleClient(gw.url)
      fresh.csrf = (await fresh.ok<{ csrf_token: string }>('POST', '/signin', { email: a.email, password: PASSWORD })).csrf_token
      t.equal((await fresh.call('POST', '/keys', { name: 'after a fresh sign-in' })).status, 201, 'a fresh sign-in creates keys again')
      const revoked = await a.ok<{ status: string }>('POST', `/keys/${created.id}/revoke`)
      t.equal(revoked.status, 'revoked')
      await expectCode(t, await chat(gw, created.key), 401, 'AUTH_INVALID_API_KEY')
      await expectCode(t, await a.call('PATCH', `/keys/${created.id}`, { name: 'again' }), 400, 'AUTH_API_KEY_REVOKED')
    })

    t.test('wallet, ledger, request log, usage and models', async (t) => {
      const a = await signedInClient(gw.url, ADMIN_TOKEN)
      await gw.services.store.ledger.credit({ accountId: a.accountId, amount: 5_000_000_000n, kind: 'topup', postingId: `test:${a.accountId}` })
      const key = await a.ok<{ key: string }>('POST', '/keys', { name: 'app' })
      await (await chat(gw, key.key)).arrayBuffer()
      await (await chat(gw, key.key, 'openai/no-such-model')).arrayBuffer()
      await gw.services.requestLog.flush()
      let requests: { data: Array<{ cost: string | null, outcome: string, requested_model: string }> } = { data: [] }
      for (let i = 0; i < 50 && requests.data.length < 2; i++) {
        requests = await a.ok('GET', '/requests')
        if (requests.data.length < 2) await new Promise((resolve) => setTimeout(resolve, 100))
      }
      t.equal(requests.data.length, 2, 'both requests in the log')
      const completed = requests.data.filter((r) => r.outcome === 'completed')
      t.equal(completed.length, 1)
      t.ok(completed[0]?.cost !== null && Number(completed[0]?.cost) > 0, 'the charge is shown')
      const filtered = await a.ok<{ data: unknown[] }>('GET', '/requests?outcome=refused')
      t.equal(filtered.data.length, 1, 'filter by outcome')
      const byModel = await a.ok<{ data: unknown[] }>('GET', '/requests?model=openai/gpt-4o-mini')
      t.equal(byModel.data.length, 1, 'filter by model')
      const wallet = await a.ok<{ balance: string, account_id: string }>('GET', '/wallet')
      t.equal(wallet.account_id, a.accountId)
      t.ok(Number(wallet.balance) < 5, `the charge left the wallet (${wallet.balance})`)
      const ledger = await a.ok<{ data: Array<{ kind: string }> }>('GET', '/ledger')
      t.same(ledger.data.map((e) => e.kind).sort(), ['charge', 'topup'])
      const usage = await a.ok<{ days: Array<{ date: string, requests: number, cost: string }>, models: Array<{ model: string, requests: number }>, total_cost: string }>('GET', '/usage?days=7')
      t.equal(usage.days.length, 7)
      t.equal(usage.days.reduce((n, d) => n + d.requests, 0), 2, 'both requests counted by day')
      t.equal(usage.total_cost, completed[0]?.cost, 'the total is the charge')
      await expectCode(t, await a.call('GET', '/usage?days=1000'), 400, 'REQUEST_INVALID')
      const models = await a.ok<{ data: Array<{ id: string, pricing: unknown, status: string }> }>('GET', '/models')
      t.ok(models.data.some((m) => m.id === 'openai/gpt-4o-mini' && m.pricing !== undefined), 'models with prices')
      t.notOk(models.data.some((m) => m.status === 'retired'), 'no retired model listed')
    })

    t.test("account B's session reaches nothing of account A, on every console route", async (t) => {
      const a = await signedInClient(gw.url, ADMIN_TOKEN)
      const b = await signedInClient(gw.url, ADMIN_TOKEN)
      await gw.services.store.ledger.credit({ accountId: a.accountId, amount: 5_000_000_000n, kind: 'topup', postingId: `test:${a.accountId}` })
      const aKey = await a.ok<{ id: string, key: string }>('POST', '/keys', { name: 'a key' })
      const chatRes = await chat(gw, aKey.key)
      const aRequestId = chatRes.headers.get('x-request-id') ?? ''
      await chatRes.arrayBuffer()
      const aSession = (await a.ok<{ session: { id: string } }>('GET', '/session')).session.id
      const ids: Record<string, string> = { '/keys/': aKey.id, '/sessions/': aSession, '/requests/': aRequestId }
      // Every console API route, as Fastify registered it (read from its route tree).
      const routes: Array<{ method: string, path: string }> = []
      const stack: string[] = []
      for (const line of gw.app.printRoutes({ commonPrefix: false }).split('\n')) {
        const m = /^((?:│ {3}| {4})*)(?:├── |└── )(.*?)(?: \(([^)]+)\))?$/.exec(line)
        if (m === null) continue
        stack.length = (m[1] ?? '').length / 4
        stack.push(m[2] ?? '')
        const path = stack.join('').replace(/\/+/g, '/')
        if (m[3] === undefined || !path.startsWith('/console/v1/')) continue
        for (const method of m[3].split(', ')) if (method !== 'HEAD') routes.push({ method, path })
      }
      t.ok(routes.length >= 20, `${routes.length} console routes found`)
      const aMarks = [a.accountId, a.email, aKey.id, aSession, aRequestId]
      for (const { method, path } of routes) {
        if (path.includes(':id')) {
          const prefix = Object.keys(ids).find((p) => path.startsWith(`/console/v1${p}`))
          t.ok(prefix !== undefined, `${method} ${path}: an id of A to try`)
          const url = path.replace('/console/v1', '').replace(':id', ids[prefix ?? ''] ?? 'x')
          const res = await b.call(method, url, method === 'PATCH' ? { name: 'stolen' } : undefined)
          t.equal(res.status, 404, `${method} ${path} with A's id: 404`)
          const text = await res.text()
          for (const mark of aMarks.slice(1)) t.notOk(text.includes(mark) && mark !== ids[prefix ?? ''], `${method} ${path}: nothing of A in the answer`)
        } else if (method === 'GET') {
          const text = await (await b.call(method, path.replace('/console/v1', ''))).text()
          for (const mark of aMarks) t.notOk(text.includes(mark), `${method} ${path}: nothing of A (${mark.slice(0, 12)}…)`)
        }
      }
      // A's key and session are untouched.
      t.equal((await a.ok<{ status: string }>('GET', `/keys/${aKey.id}`)).status, 'active')
      t.equal((await a.ok<{ session: { id: string } }>('GET', '/session')).session.id, aSession)
      t.equal((await chat(gw, aKey.key)).status, 200)
    })

    t.test('no password, code or session token is stored in the clear', async (t) => {
      const c = consoleClient(gw.url)
      const email = uniqueEmail('clear')
      const password = 'a very particular passphrase 42'
      await c.ok('POST', '/signup', { email, password })
      const code = await outboxCode(gw.url, ADMIN_TOKEN, email)
      const backendStore = gw.services.store.backend
      const dumpOf = async (table: string): Promise<string> => JSON.stringify(backendStore.kind === 'sqlite'
        ? backendStore.db.prepare(`SELECT * FROM ${table}`).all()
        : (await backendStore.pool.query(`SELECT * FROM ${table}`)).rows, (_k, v: unknown) => typeof v === 'bigint' ? String(v) : v)
      const codes = await dumpOf('console_email_codes')
      t.match(codes, /"code_hash":"[0-9a-f]{64}"/, 'the pending code is a digest')
      t.notOk(codes.includes(`"${code}"`), 'the code itself is not stored')
      await c.ok('POST', '/signin', { email, password }).catch(() => null)
      const token = c.cookie?.slice('gw_console='.length) ?? ''
      await c.ok('POST', '/verify', { email, code: code === '000000' ? '000001' : '000000' }).catch(() => null)
      const signed = consoleClient(gw.url)
      await c.ok('POST', '/verify', { email, code })
      await signed.ok('POST', '/signin', { email, password })
      const sessionToken = signed.cookie?.slice('gw_console='.length) ?? ''
      t.match(sessionToken, /^[A-Za-z0-9_-]{43}$/, 'a session token to look for')
      const tables = ['console_users', 'console_signups', 'console_email_codes', 'console_sessions']
      let dump = ''
      for (const table of tables) dump += await dumpOf(table)
      t.ok(dump.includes(email), 'the dump holds the user row')
      t.notOk(dump.includes(password), 'no plaintext password')
      t.match(dump, /scrypt\$1024\$8\$1\$/, 'an scrypt hash with its parameters: the configured ones (TEST_SCRYPT_COST)')
      t.notOk(dump.includes(sessionToken), 'no session token')
      t.equal(token, '', 'an unverified sign-in got no session cookie')
    })

    t.test('a suspended account: open sessions are refused, and so is sign-in', async (t) => {
      const a = await signedInClient(gw.url, ADMIN_TOKEN)
      t.equal((await a.call('GET', '/keys')).status, 200, 'active: served')
      const patch = await fetch(`${gw.url}/admin/v1/accounts/${a.accountId}`, {
        method: 'PATCH', headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' }, body: JSON.stringify({ status: 'suspended' })
      })
      t.equal(patch.status, 200, 'suspended by the operator')
      await expectCode(t, await a.call('GET', '/keys'), 403, 'AUTH_ACCOUNT_SUSPENDED')
      await expectCode(t, await a.call('POST', '/keys', { name: 'x' }), 403, 'AUTH_ACCOUNT_SUSPENDED')
      await expectCode(t, await consoleClient(gw.url).call('POST', '/signin', { email: a.email, password: PASSWORD }), 403, 'AUTH_ACCOUNT_SUSPENDED')
    })

    t.test('the outbox needs the admin token', async (t) => {
      const res = await fetch(`${gw.url}/admin/v1/console/outbox`)
      t.equal(res.status, 401)
      await res.arrayBuffer()
    })
  })
}
