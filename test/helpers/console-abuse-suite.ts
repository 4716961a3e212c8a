// The console attacked many times over, on one store, against a running gateway: the
// verification code brute force of issue 26 (resend + guesses from six clients) bounded by the
// guess and mail budgets, sign-up floods, password spraying across emails from one address,
// failures for one email across addresses, the password length bound, the password reset,
// `verify` that tells nothing, query parameters checked by schema, the Secure cookie behind a
// trusted proxy, and an access-log line per call with no secret in it.
import t from 'tap'
import { createHash } from 'node:crypto'
import { openConsoleStore } from '../../plugins/console/index.js'
import { startTestGateway, type Backend } from './gateway.js'
import { ManualClock } from './store.js'
import { consoleClient, humanCheck, outbox, outboxCode, PASSWORD, signedInClient, uniqueEmail, type ConsoleClient } from './console.js'
import { CONSOLE_ADMIN_TOKEN as ADMIN_TOKEN, consoleTestConfig, expectCode, type ErrorBody } from './console-api-suite.js'

/** The budgets this suite runs against (small, so each is run through quickly). */
export const ABUSE_BUDGETS = {
  verification_max_attempts: 5,
  code_guesses_per_email_per_hour: 12,
  mails_per_email_per_hour: 4,
  mail_requests_per_address_per_hour: 50,
  signups_per_address_per_hour: 3,
  human_check_after_failures: 2,
  signin_max_failures: 5,
  signin_max_failures_per_email: 4,
  signin_failure_window_ms: 60_000,
  password_hash_queue: 4
} as const

/** A six-digit code that is not `code`. */
function wrongCode (code: string, seed: number): string {
  const guess = String((Number(code) + 1 + seed * 7919) % 1_000_000).padStart(6, '0')
  return guess === code ? String((Number(code) + 2) % 1_000_000).padStart(6, '0') : guess
}

const withoutId = (b: ErrorBody): unknown => ({ ...b.error, request_id: null })

export function consoleAbuseSuite (backend: Backend): void {
  t.test(`console abuse on ${backend}`, async (t) => {
    const configFile = consoleTestConfig(ABUSE_BUDGETS)
    t.teardown(configFile.remove)
    const clock = new ManualClock(new Date())
    const lines: string[] = []
    const gw = await startTestGateway({
      backend,
      configFile: configFile.file,
      services: { clock },
      server: { adminToken: ADMIN_TOKEN, logger: { level: 'info', stream: { write: (line: string) => { lines.push(line) } } } }
    })
    t.teardown(() => gw.close())
    const consoleStore = openConsoleStore(gw.services.store.backend)
    const cfg = gw.config.console
    const countAccounts = async (): Promise<number> => {
      const b = gw.services.store.backend
      return b.kind === 'sqlite'
        ? Number((b.db.prepare('SELECT count(*) AS n FROM accounts').get() as { n: number | bigint }).n)
        : Number((await b.pool.query<{ n: string }>('SELECT count(*) AS n FROM accounts')).rows[0]?.n)
    }

    t.test('the verification brute force (resend + 5 guesses, 6 clients) stops within the guess budget, code unguessed', async (t) => {
      const victim = uniqueEmail('victim')
      const attacker = consoleClient(gw.url)
      await attacker.ok('POST', '/signup', { email: victim, password: 'the attacker password' })
      const clients = Array.from({ length: 6 }, () => consoleClient(gw.url))
      const guesses: number[] = []
      const resends: number[] = []
      let retryAfter = ''
      for (let round = 0; round < 8; round++) {
        const c = clients[round % clients.length] as ConsoleClient
        const resend = await c.call('POST', '/verify/resend', { email: victim })
        resends.push(resend.status)
        await resend.arrayBuffer()
        // The test reads the real code to be sure every guess is wrong: the budget must stop
        // the loop, not luck.
        const real = await outboxCode(gw.url, ADMIN_TOKEN, victim)
        for (let i = 0; i < 5; i++) {
          const res = await c.call('POST', '/verify', { email: victim, code: wrongCode(real, round * 5 + i) })
          guesses.push(res.status)
          if (res.status === 429) retryAfter = res.headers.get('retry-after') ?? ''
          await res.arrayBuffer()
        }
      }
      const accepted = guesses.filter((s) => s === 422).length
      t.equal(accepted, cfg.code_guesses_per_email_per_hour, `exactly ${cfg.code_guesses_per_email_per_hour} guesses were compared`)
      t.same(guesses.slice(accepted), Array(guesses.length - accepted).fill(429), 'every later guess is refused with 429')
      t.equal(retryAfter, '3600', 'Retry-After: the rest of the hour (the clock stands still)')
      // Sign-up mailed one code; resends mail until the address's mail budget is spent.
      t.same(resends, [202, 202, 202, 429, 429, 429, 429, 429], 'resends stop at the mail budget')
      t.equal((await outbox(gw.url, ADMIN_TOKEN, victim)).length, cfg.mails_per_email_per_hour, `${cfg.mails_per_email_per_hour} mails reached the victim`)
      // Even the right code is not compared once the budget is spent.
      const real = await outboxCode(gw.url, ADMIN_TOKEN, victim)
      await expectCode(t, await clients[0]!.call('POST', '/verify', { email: victim, code: real }), 429, 'LIMIT_RATE_EXCEEDED')
      // Plus-addressed variants share the mailbox's budget, for a reset code too.
      const [local, domain] = victim.split('@')
      await expectCode(t, await clients[1]!.call('POST', '/verify', { email: `${local}+x@${domain}`, code: '123456' }), 429, 'LIMIT_RATE_EXCEEDED')
      await expectCode(t, await clients[1]!.call('POST', '/password/reset/confirm', { email: victim, code: '123456', password: 'some new password' }), 429, 'LIMIT_RATE_EXCEEDED')
      t.equal(await consoleStore.userByEmail(victim), null, 'no user holds the address')
      await expectCode(t, await attacker.call('POST', '/signin', { email: victim, password: 'the attacker password' }), 403, 'AUTH_EMAIL_NOT_VERIFIED')

      // The real owner, an hour later: the stale pending sign-up no longer holds the address.
      clock.advance(3_600_000)
      const owner = consoleClient(gw.url)
      t.equal((await owner.call('POST', '/signup', { email: victim, password: PASSWORD })).status, 201, 'a new sign-up restarts the pending one')
      const verified = await owner.ok<{ account_id: string }>('POST', '/verify', { email: victim, code: await outboxCode(gw.url, ADMIN_TOKEN, victim) })
      t.match(verified.account_id, /^acct_/, 'the owner verified the address')
      await expectCode(t, await attacker.call('POST', '/signin', { email: victim, password: 'the attacker password' }), 401, 'AUTH_CREDENTIALS_INVALID')
      t.equal((await owner.call('POST', '/signin', { email: victim, password: PASSWORD })).status, 200, 'the owner signs in with their password')
    })

    t.test('a sign-up flood from one address: exactly the budget is admitted, and no account before verification', async (t) => {
      const accounts = await countAccounts()
      const flood = consoleClient(gw.url)
      const statuses: number[] = []
      for (let i = 0; i < 8; i++) {
        const res = await flood.call('POST', '/signup', { email: uniqueEmail('flood'), password: PASSWORD })
        statuses.push(res.status)
        if (i === 7) await expectCode(t, res, 429, 'LIMIT_RATE_EXCEEDED')
        else await res.arrayBuffer()
      }
      t.same(statuses, [201, 201, 201, 429, 429, 429, 429, 429], `${cfg.signups_per_address_per_hour} sign-ups admitted from one address`)
      t.equal(await countAccounts(), accounts, 'pending sign-ups hold no account')
      t.equal((await consoleClient(gw.url).call('POST', '/signup', { email: uniqueEmail('other'), password: PASSWORD })).status, 201, 'another address signs up')
    })

    t.test('sign-ups and resends for one mailbox, across addresses and plus tags, stop at the mail budget', async (t) => {
      const email = uniqueEmail('mailbox')
      const [local, domain] = email.split('@')
      const statuses: number[] = []
      for (let i = 0; i < 6; i++) {
        const res = await consoleClient(gw.url).call('POST', '/signup', { email: `${local}+${i}@${domain}`, password: PASSWORD })
        statuses.push(res.status)
        await res.arrayBuffer()
      }
      t.same(statuses, [201, 201, 201, 201, 429, 429], `${cfg.mails_per_email_per_hour} sign-ups for one mailbox, whatever the tag and address`)
    })

    t.test('the password length is bounded before any hashing', async (t) => {
      const c = consoleClient(gw.url)
      const long = 'x'.repeat(cfg.password_max_length + 1)
      const body = await expectCode(t, await c.call('POST', '/signup', { email: uniqueEmail('long'), password: long }), 400, 'REQUEST_INVALID')
      t.equal(body.error.param, 'password')
      t.match(body.error.message, new RegExp(`at most ${cfg.password_max_length} characters`))
      await expectCode(t, await c.call('POST', '/signup', { email: uniqueEmail('kib'), password: 'p'.repeat(1024) }), 400, 'REQUEST_INVALID')
      await expectCode(t, await consoleClient(gw.url).call('POST', '/signin', { email: uniqueEmail('kib'), password: 'p'.repeat(1024) }), 400, 'REQUEST_INVALID')
      await expectCode(t, await consoleClient(gw.url).call('POST', '/password/reset/confirm', { email: uniqueEmail('kib'), code: '123456', password: long }), 400, 'REQUEST_INVALID')
      // Characters, not UTF-16 units: 128 emoji pass.
      const res = await consoleClient(gw.url).call('POST', '/signup', { email: uniqueEmail('emoji'), password: '🔑'.repeat(cfg.password_max_length) })
      t.equal(res.status, 201, `${cfg.password_max_length} characters are accepted`)
    })

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

    t.test('verify answers the same for a verified, an unknown and a pending address', async (t) => {
      const verified = await signedInClient(gw.url, ADMIN_TOKEN)
      const pending = uniqueEmail('pending')
      await consoleClient(gw.url).ok('POST', '/signup', { email: pending, password: PASSWORD })
      const code = wrongCode(await outboxCode(gw.url, ADMIN_TOKEN, pending), 1)
      const answers: ErrorBody[] = []
      const headers: string[] = []
      for (const email of [verified.email, uniqueEmail('unknown'), pending]) {
        const res = await consoleClient(gw.url).call('POST', '/verify', { email, code })
        headers.push(`${res.status} ${res.headers.get('x-gateway-error-code')} ${res.headers.get('content-type')}`)
        answers.push(await expectCode(t, res, 422, 'AUTH_VERIFICATION_CODE_INVALID'))
      }
      t.same(headers[1], headers[0], 'same status and headers: verified vs unknown')
      t.same(withoutId(answers[1]!), withoutId(answers[0]!), 'same body: verified vs unknown')
      t.same(withoutId(answers[2]!), withoutId(answers[0]!), 'same body for a wrong code of a pending sign-up')
    })

    t.test('password reset by email code: same answer for unknown addresses, ends every session', async (t) => {
      const user = await signedInClient(gw.url, ADMIN_TOKEN)
      const other = consoleClient(gw.url)
      other.csrf = (await other.ok<{ csrf_token: string }>('POST', '/signin', { email: user.email, password: PASSWORD })).csrf_token
      const unknown = uniqueEmail('nobody')
      const known = await user.call('POST', '/password/reset', { email: user.email })
      const nobody = await consoleClient(gw.url).call('POST', '/password/reset', { email: unknown })
      t.equal(known.status, 202)
      t.equal(nobody.status, 202)
      t.same({ ...(await known.json() as object), email: null }, { ...(await nobody.json() as object), email: null }, 'the same answer')
      t.same(await outbox(gw.url, ADMIN_TOKEN, unknown), [], 'no mail for an unknown address')
      const code = await outboxCode(gw.url, ADMIN_TOKEN, user.email)
      const mails = await outbox(gw.url, ADMIN_TOKEN, user.email, 1)
      t.match(mails[0]?.subject, /password reset/, 'a reset mail')
      await expectCode(t, await consoleClient(gw.url).call('POST', '/password/reset/confirm', { email: user.email, code: wrongCode(code, 3), password: 'a brand new password' }), 422, 'AUTH_VERIFICATION_CODE_INVALID')
      await expectCode(t, await consoleClient(gw.url).call('POST', '/password/reset/confirm', { email: user.email, code, password: 'short' }), 400, 'REQUEST_INVALID')
      const done = await consoleClient(gw.url).ok<{ status: string, sessions_ended: number }>('POST', '/password/reset/confirm', { email: user.email, code, password: 'a brand new password' })
      t.same(done, { email: user.email, status: 'password_reset', sessions_ended: 2 })
      await expectCode(t, await user.call('GET', '/session'), 401, 'AUTH_REQUIRED')
      await expectCode(t, await other.call('GET', '/session'), 401, 'AUTH_REQUIRED')
      await expectCode(t, await consoleClient(gw.url).call('POST', '/password/reset/confirm', { email: user.email, code, password: 'yet another password' }), 422, 'AUTH_VERIFICATION_CODE_INVALID')
      await expectCode(t, await consoleClient(gw.url).call('POST', '/signin', { email: user.email, password: PASSWORD }), 401, 'AUTH_CREDENTIALS_INVALID')
      t.equal((await consoleClient(gw.url).call('POST', '/signin', { email: user.email, password: 'a brand new password' })).status, 200, 'the new password signs in')
      // A pending (unverified) address gets no reset mail either.
      const pending = uniqueEmail('pending-reset')
      await consoleClient(gw.url).ok('POST', '/signup', { email: pending, password: PASSWORD })
      t.equal((await consoleClient(gw.url).call('POST', '/password/reset', { email: pending })).status, 202)
      t.equal((await outbox(gw.url, ADMIN_TOKEN, pending)).length, 1, 'only the sign-up code')
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
