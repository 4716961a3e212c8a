// The console's sign-in attacked many times over, against a running gateway on one store:
// password spraying across emails from one address, failures for one email across addresses,
// the bounded password hasher under a flood, query parameters checked by schema, the Secure
// cookie behind a trusted proxy, and an access-log line per call with no secret in it.
import t from 'tap'
import { createHash } from 'node:crypto'
import type { Backend } from './gateway.js'
import { consoleClient, humanCheck, outboxCode, PASSWORD, signedInClient, uniqueEmail } from './console.js'
import { CONSOLE_ADMIN_TOKEN as ADMIN_TOKEN, expectCode } from './console-api-suite.js'
import { abuseGateway } from './console-abuse.js'
import { MAX_SESSIONS_PER_USER } from '../../plugins/apps/console/session.js'

export function consoleAbuseSigninSuite (backend: Backend): void {
  t.test(`console abuse: sign-in, sessions and audit on ${backend}`, async (t) => {
    const { gw, clock, lines, cfg, consoleStore } = await abuseGateway(t, backend)

    t.test('one password sprayed across emails from one address meets the proof of work, then 429', async (t) => {
      const sprayer = consoleClient(gw.url)
      const attempt = async (extra: Record<string, unknown> = {}): Promise<Response> =>
        await sprayer.call('POST', '/signin', { email: uniqueEmail('spray'), password: 'Summer2030!', ...extra })
      for (let i = 0; i < cfg.human_check_after_failures; i++) await expectCode(t, await attempt(), 401, 'AUTH_CREDENTIALS_INVALID')
      await expectCode(t, await attempt(), 400, 'AUTH_HUMAN_CHECK_REQUIRED')
      for (let i = cfg.human_check_after_failures; i < cfg.signin_max_failures; i++) {
        await expectCode(t, await attempt({ human_check: await humanCheck(sprayer) }), 401, 'AUTH_CREDENTIALS_INVALID')
      }
      const limited = await attempt({ human_check: await humanCheck(sprayer) })
      t.equal(limited.headers.get('retry-after'), String(cfg.signin_failure_window_ms / 1000), 'Retry-After: the rest of the window')
      await expectCode(t, limited, 429, 'LIMIT_RATE_EXCEEDED')
      // Another client address is not affected.
      const user = await signedInClient(gw.url, ADMIN_TOKEN)
      t.ok(user.csrf, 'a client elsewhere signs in')
    })

    t.test('a spray sent all at once from one address: no more passwords checked than the budget before the proof of work', async (t) => {
      const sprayer = consoleClient(gw.url)
      const statuses = await Promise.all(Array.from({ length: 30 }, async () => {
        const res = await sprayer.call('POST', '/signin', { email: uniqueEmail('burst-spray'), password: 'Summer2030!' })
        const code = res.headers.get('x-gateway-error-code')
        await res.arrayBuffer()
        return `${res.status} ${code}`
      }))
      const checked = statuses.filter((s) => s === '401 AUTH_CREDENTIALS_INVALID').length
      t.ok(checked <= cfg.human_check_after_failures, `${checked} passwords checked (at most ${cfg.human_check_after_failures}): ${[...new Set(statuses)].join(', ')}`)
      t.ok(statuses.every((s) => ['401 AUTH_CREDENTIALS_INVALID', '400 AUTH_HUMAN_CHECK_REQUIRED', '429 LIMIT_RATE_EXCEEDED'].includes(s)), 'the rest asked for the proof of work or refused')
      await expectCode(t, await sprayer.call('POST', '/signin', { email: uniqueEmail('burst-spray'), password: 'Summer2030!' }), 400, 'AUTH_HUMAN_CHECK_REQUIRED')
    })

    t.test('an email cannot be locked without the proof of work: a burst from many addresses, or forged solutions, leave its owner a way in', async (t) => {
      // Locking an email (signin_max_failures_per_email failures) costs a solved challenge per
      // failure past human_check_after_failures. Requests that checked no password (refused over
      // the budget while others were in flight, or with a forged solution) must not count for it.
      const user = await signedInClient(gw.url, ADMIN_TOKEN)
      const burst = await Promise.all(Array.from({ length: 30 }, async () => {
        const res = await consoleClient(gw.url).call('POST', '/signin', { email: user.email, password: 'wrong password 3' })
        await res.arrayBuffer()
        return res.status
      }))
      t.ok(burst.filter((s) => s === 401).length <= cfg.human_check_after_failures, `at most ${cfg.human_check_after_failures} passwords checked in the burst (${burst.join(' ')})`)
      for (let i = 0; i < cfg.signin_max_failures_per_email * 2; i++) {
        const res = await consoleClient(gw.url).call('POST', '/signin', { email: user.email, password: 'wrong password 4', human_check: { challenge: 'forged', solution: 'forged' } })
        t.equal(res.headers.get('x-gateway-error-code'), 'AUTH_HUMAN_CHECK_FAILED', 'a forged solution fails')
        await res.arrayBuffer()
      }
      const owner = consoleClient(gw.url)
      const res = await owner.call('POST', '/signin', { email: user.email, password: PASSWORD, human_check: await humanCheck(owner) })
      t.equal(res.status, 200, 'the owner signs in (with the proof of work the page solves)')
      await res.arrayBuffer()
    })

    t.test('failures for one email from many addresses meet the proof of work, then 429, right password included', async (t) => {
      const user = await signedInClient(gw.url, ADMIN_TOKEN)
      const from = (extra: Record<string, unknown> = {}, password = 'wrong password 1'): Promise<Response> =>
        consoleClient(gw.url).call('POST', '/signin', { email: user.email, password, ...extra })
      for (let i = 0; i < cfg.human_check_after_failures; i++) await expectCode(t, await from(), 401, 'AUTH_CREDENTIALS_INVALID')
      await expectCode(t, await from(), 400, 'AUTH_HUMAN_CHECK_REQUIRED')
      for (let i = cfg.human_check_after_failures; i < cfg.signin_max_failures_per_email; i++) {
        const c = consoleClient(gw.url)
        await expectCode(t, await c.call('POST', '/signin', { email: user.email, password: 'wrong password 2', human_check: await humanCheck(c) }), 401, 'AUTH_CREDENTIALS_INVALID')
      }
      const c = consoleClient(gw.url)
      await expectCode(t, await c.call('POST', '/signin', { email: user.email, password: PASSWORD, human_check: await humanCheck(c) }), 429, 'LIMIT_RATE_EXCEEDED')
      clock.advance(cfg.signin_failure_window_ms)
      t.equal((await from({}, PASSWORD)).status, 200, 'after the window the owner signs in')
    })

    t.test(`one user holds at most ${MAX_SESSIONS_PER_USER} sessions: signing in over and over ends the oldest`, async (t) => {
      const user = await signedInClient(gw.url, ADMIN_TOKEN)
      const stored = await consoleStore.userByEmail(user.email)
      if (stored === null) throw new Error('no user')
      // The sessions of earlier sign-ins (each a scrypt through the API would take the file's time), older than the first one.
      const before = clock.now().getTime()
      for (let i = 0; i < MAX_SESSIONS_PER_USER + 5; i++) {
        const at = new Date(before - 60_000 + i)
        await consoleStore.createSession({ id: `ses_seeded_${i}`, userId: stored.id, accountId: stored.accountId, userAgent: '', address: '', createdAt: at, lastSeenAt: at, expiresAt: new Date(before + 3_600_000) }, `seeded-${user.email}-${i}`)
      }
      t.equal((await user.ok<{ data: unknown[] }>('GET', '/sessions')).data.length, MAX_SESSIONS_PER_USER + 6, 'sessions stored before the cap was met')
      const next = consoleClient(gw.url)
      next.csrf = (await next.ok<{ csrf_token: string }>('POST', '/signin', { email: user.email, password: PASSWORD })).csrf_token
      const listed = await next.ok<{ data: Array<{ id: string, current: boolean }> }>('GET', '/sessions')
      t.equal(listed.data.length, MAX_SESSIONS_PER_USER, `one more sign-in: ${MAX_SESSIONS_PER_USER} sessions left`)
      t.ok(listed.data.some((x) => x.current), 'the new one among them')
      t.equal((await user.call('GET', '/session')).status, 200, 'the first sign-in, newer than the seeded ones, stays')
      t.notOk(listed.data.some((x) => x.id === 'ses_seeded_0'), 'the oldest ended')
    })

    t.test('every console query parameter is checked by its route schema: 400 naming it, never a 500', async (t) => {
      const a = await signedInClient(gw.url, ADMIN_TOKEN)
      // A path segment past Fastify's maxParamLength (100) is refused before any route: 400, no param.
      const cases: Array<[string, string | null]> = [
        ['/ledger?limit=abc', 'limit'], ['/ledger?limit=0', 'limit'], ['/ledger?limit=1000', 'limit'], ['/ledger?limit=1&limit=2', 'limit'],
        ['/usage?days=x', 'days'], ['/usage?days=1000', 'days'], ['/usage?days[]=1', 'days[]'],
        ['/requests?limit=100000000', 'limit'], ['/requests?limit=1001', 'limit'], ['/requests?from=yesterday', 'from'],
        ['/requests?before=not-a-cursor', 'before'], ['/requests?account_id=acct_x', 'account_id'],
        ['/keys?x=1', 'x'], ['/wallet?limit=1', 'limit'], ['/sessions?y=', 'y'], [`/keys/${'k'.repeat(300)}`, null]
      ]
      for (const [path, param] of cases) {
        const body = await expectCode(t, await a.call('GET', path), 400, 'REQUEST_INVALID')
        t.equal(body.error.param, param, `${path.slice(0, 40)}: names ${param}`)
      }
    })

    t.test('the session cookie is Secure over https through a trusted proxy', async (t) => {
      const user = await signedInClient(gw.url, ADMIN_TOKEN)
      const c = consoleClient(gw.url)
      const https = await c.call('POST', '/signin', { email: user.email, password: PASSWORD }, { 'x-forwarded-proto': 'https' })
      t.equal(https.status, 200)
      t.match(https.headers.get('set-cookie') ?? '', /; Secure$/, 'Secure behind the trusted proxy with X-Forwarded-Proto: https')
      const plain = await consoleClient(gw.url).call('POST', '/signin', { email: user.email, password: PASSWORD })
      t.notMatch(plain.headers.get('set-cookie') ?? '', /Secure/, 'not Secure over plain http')
      const sessions = await c.ok<{ data: Array<{ current: boolean, address: string }> }>('GET', '/sessions')
      t.equal(sessions.data.find((s) => s.current)?.address, c.address, 'the session records the client address the proxy named')
    })

    t.test('a sign-in flood waits for the bounded password hasher, or is refused before any work', async (t) => {
      // At the default scrypt cost (about 225 ms a hash here): the queue fills while the first
      // hashes run, as it does in production; at the tests' cheap cost it could empty first.
      const { gw, cfg } = await abuseGateway(t, backend, { password_scrypt_n: 32768, password_scrypt_r: 8, password_scrypt_p: 3 })
      const statuses = await Promise.all(Array.from({ length: 12 }, async () => {
        const res = await consoleClient(gw.url).call('POST', '/signin', { email: uniqueEmail('flood-in'), password: 'whatever password' })
        if (res.status === 429) t.equal(res.headers.get('retry-after'), '1', 'busy: Retry-After 1')
        await res.arrayBuffer()
        return res.status
      }))
      const checked = statuses.filter((s) => s === 401).length
      const refused = statuses.filter((s) => s === 429).length
      t.equal(checked + refused, 12, `each answered 401 or 429 (${statuses.join(' ')})`)
      t.ok(checked >= cfg.password_hash_concurrency + cfg.password_hash_queue, `at least concurrency + queue were checked (${checked})`)
      t.ok(refused > 0, `the rest were refused (${refused})`)
    })

    t.test('an access-log line for every console call, with no secret in it', async (t) => {
      const before = lines.length
      const ids: Array<{ id: string, status: number, route: string, account?: string }> = []
      const note = (res: Response, route: string, account?: string): Response => {
        ids.push({ id: res.headers.get('x-request-id') ?? '', status: res.status, route, ...(account === undefined ? {} : { account }) })
        return res
      }
      const email = uniqueEmail('audit')
      const c = consoleClient(gw.url)
      note(await c.call('POST', '/signup', { email, password: PASSWORD }), '/console/v1/signup')
      const code = await outboxCode(gw.url, ADMIN_TOKEN, email)
      const verified = await (note(await c.call('POST', '/verify', { email, code }), '/console/v1/verify')).json() as { account_id: string }
      const signin = note(await c.call('POST', '/signin', { email, password: PASSWORD }), '/console/v1/signin', verified.account_id)
      c.csrf = (await signin.json() as { csrf_token: string }).csrf_token
      const key = note(await c.call('POST', '/keys', { name: 'audited' }), '/console/v1/keys', verified.account_id)
      const created = await key.json() as { id: string, key: string }
      note(await c.call('POST', `/keys/${created.id}/reveal`), '/console/v1/keys/:id/reveal', verified.account_id)
      note(await c.call('POST', '/password/reset', { email }), '/console/v1/password/reset')
      const resetCode = await outboxCode(gw.url, ADMIN_TOKEN, email)
      note(await c.call('POST', '/password/reset/confirm', { email, code: resetCode, password: 'the second password' }), '/console/v1/password/reset/confirm', verified.account_id)
      note(await c.call('GET', '/no-such-route'), '')
      const token = c.cookie?.slice('gw_console='.length) ?? ''
      const log = lines.slice(before).join('')
      const entries = lines.slice(before).map((l) => JSON.parse(l) as Record<string, unknown>).filter((e) => e.msg === 'console request')
      for (const call of ids) {
        const mine = entries.filter((e) => e.requestId === call.id)
        t.equal(mine.length, 1, `one line for ${call.route || 'an unknown route'} (${call.id})`)
        const line = mine[0] ?? {}
        t.equal(line.status, call.status, 'its status')
        t.equal(line.route, call.route === '' ? null : call.route, 'the declared route, never the URL')
        t.ok(typeof line.method === 'string' && typeof line.totalMs === 'number' && line.address === c.address, 'method, time and client address')
        if (call.account !== undefined) t.equal(line.accountId, call.account, 'the account')
      }
      const signupLine = entries.find((e) => e.route === '/console/v1/signup')
      t.equal(signupLine?.emailHash, createHash('sha256').update(email).digest('hex').slice(0, 16), 'the email as a short hash')
      for (const [what, secret] of [['email', email], ['password', PASSWORD], ['new password', 'the second password'], ['code', code], ['reset code', resetCode],
        ['session token', token], ['CSRF token', c.csrf ?? ''], ['key', created.key]] as const) {
        t.ok(secret.length > 0 && !log.includes(secret), `no ${what} in the log`)
      }
    })
  })
}
