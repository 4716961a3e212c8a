// The console's sign-up, email codes and password reset attacked many times over, against a
// running gateway on one store: the verification code brute force of issue 26 (resend + guesses
// from six clients) bounded by the guess and mail budgets, sign-up floods per address and per
// mailbox, the password length bound, `verify` that tells nothing, the password reset.
import t from 'tap'
import type { Backend } from './gateway.js'
import { consoleClient, outbox, outboxCode, PASSWORD, signedInClient, uniqueEmail, type ConsoleClient } from './console.js'
import { CONSOLE_ADMIN_TOKEN as ADMIN_TOKEN, expectCode, type ErrorBody } from './console-api-suite.js'
import { abuseGateway, wrongCode, withoutId } from './console-abuse.js'

export function consoleAbuseCodesSuite (backend: Backend): void {
  t.test(`console abuse: sign-up, codes and reset on ${backend}`, async (t) => {
    const { gw, clock, consoleStore, cfg, countAccounts } = await abuseGateway(t, backend)

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

    t.test('a resend kills the previous code, a code dies at its expiry, a reset code after its wrong guesses', async (t) => {
      const email = uniqueEmail('lifecycle')
      const c = consoleClient(gw.url)
      await c.ok('POST', '/signup', { email, password: PASSWORD })
      const first = await outboxCode(gw.url, ADMIN_TOKEN, email)
      t.equal((await c.call('POST', '/verify/resend', { email })).status, 202, 'a resend')
      const second = await outboxCode(gw.url, ADMIN_TOKEN, email)
      t.not(second, first, 'a new code')
      await expectCode(t, await c.call('POST', '/verify', { email, code: first }), 422, 'AUTH_VERIFICATION_CODE_INVALID')
      clock.advance(cfg.verification_code_ttl_ms)
      await expectCode(t, await c.call('POST', '/verify', { email, code: second }), 422, 'AUTH_VERIFICATION_CODE_INVALID')
      t.equal(await consoleStore.userByEmail(email), null, 'neither the replaced nor the expired code verified the address')

      // A reset code: void after verification_max_attempts wrong guesses, the right one included.
      const user = await signedInClient(gw.url, ADMIN_TOKEN)
      t.equal((await consoleClient(gw.url).call('POST', '/password/reset', { email: user.email })).status, 202)
      const reset = await outboxCode(gw.url, ADMIN_TOKEN, user.email)
      for (let i = 0; i < cfg.verification_max_attempts; i++) {
        await expectCode(t, await consoleClient(gw.url).call('POST', '/password/reset/confirm', { email: user.email, code: wrongCode(reset, i), password: 'a brand new password' }), 422, 'AUTH_VERIFICATION_CODE_INVALID')
      }
      await expectCode(t, await consoleClient(gw.url).call('POST', '/password/reset/confirm', { email: user.email, code: reset, password: 'a brand new password' }), 422, 'AUTH_VERIFICATION_CODE_INVALID')
      t.equal((await consoleClient(gw.url).call('POST', '/signin', { email: user.email, password: PASSWORD })).status, 200, 'the password is unchanged')
    })

    t.test('guesses sent all at once, from many clients, are compared exactly up to the guess budget', async (t) => {
      const victim = uniqueEmail('concurrent')
      await consoleClient(gw.url).ok('POST', '/signup', { email: victim, password: 'the attacker password' })
      const real = await outboxCode(gw.url, ADMIN_TOKEN, victim)
      // Four times the budget, each from its own client address, none waiting for another.
      const statuses = await Promise.all(Array.from({ length: cfg.code_guesses_per_email_per_hour * 4 }, async (_, i) => {
        const res = await consoleClient(gw.url).call('POST', '/verify', { email: victim, code: wrongCode(real, 100 + i) })
        await res.arrayBuffer()
        return res.status
      }))
      t.equal(statuses.filter((s) => s === 422).length, cfg.code_guesses_per_email_per_hour, `exactly ${cfg.code_guesses_per_email_per_hour} of ${statuses.length} concurrent guesses compared`)
      t.equal(statuses.filter((s) => s === 429).length, statuses.length - cfg.code_guesses_per_email_per_hour, 'every other one refused with 429')
      await expectCode(t, await consoleClient(gw.url).call('POST', '/verify', { email: victim, code: real }), 429, 'LIMIT_RATE_EXCEEDED')
      t.equal(await consoleStore.userByEmail(victim), null, 'the address is not verified')
    })

    t.test('sign-ups sent all at once from one address: exactly the budget is admitted', async (t) => {
      const flood = consoleClient(gw.url)
      const statuses = await Promise.all(Array.from({ length: cfg.signups_per_address_per_hour * 5 }, async () => {
        const res = await flood.call('POST', '/signup', { email: uniqueEmail('burst'), password: PASSWORD })
        await res.arrayBuffer()
        return res.status
      }))
      t.equal(statuses.filter((s) => s === 201).length, cfg.signups_per_address_per_hour, `${cfg.signups_per_address_per_hour} of ${statuses.length} admitted`)
      t.equal(statuses.filter((s) => s === 429).length, statuses.length - cfg.signups_per_address_per_hour, 'the rest refused with 429')
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
  })
}
