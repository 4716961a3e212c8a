// The console page in a real headless Chromium (Debian's, driven by playwright-core): sign up,
// verify with the code from the outbox, sign in, create a key, call the gateway with it through
// the OpenAI SDK, see the request and its charge on the dashboard, restrict the key
// (MODEL_ACCESS_DENIED), revoke it (AUTH_INVALID_API_KEY), reset the password by an emailed code
// and sign in with the new one, and see what the page says once code requests are throttled.
// Screenshots: test/artifacts/console/.
import { existsSync, mkdirSync } from 'node:fs'
import { pathToFileURL } from 'node:url'
import t from 'tap'
import { OpenAI } from 'openai'
import { waitForRows } from './helpers/billing.js'
import { startTestGateway } from './helpers/gateway.js'
import { outboxCode, PASSWORD, uniqueEmail } from './helpers/console.js'
import { repoPath } from './helpers/paths.js'

const NEW_PASSWORD = 'a new and longer passphrase 7'

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'
const ADMIN_TOKEN = 'console-browser-admin-token-0123456789'
const ARTIFACTS = pathToFileURL(repoPath('test', 'artifacts', 'console') + '/')

if (!existsSync(CHROMIUM)) {
  t.plan(0, `no Chromium at ${CHROMIUM} (apt-get install -y --no-install-recommends chromium, or set CHROMIUM_PATH): the console browser tests are skipped`)
} else {
  const { chromium } = await import('playwright-core')
  mkdirSync(ARTIFACTS, { recursive: true })
  const shot = (name: string): { path: string, fullPage: boolean } => ({ path: new URL(`${name}.png`, ARTIFACTS).pathname, fullPage: true })

  t.test('sign up, verify, sign in, key, SDK call, dashboard, restrict, revoke, password reset, throttled', async (t) => {
    const gw = await startTestGateway({ server: { adminToken: ADMIN_TOKEN } })
    t.teardown(() => gw.close())
    const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-dev-shm-usage'] })
    t.teardown(() => browser.close())
    const context = await browser.newContext({ permissions: ['clipboard-read', 'clipboard-write'] })
    const page = await context.newPage()
    const cspViolations: string[] = []
    page.on('console', (msg) => { if (/Content Security Policy/i.test(msg.text())) cspViolations.push(msg.text()) })
    page.on('pageerror', (err) => { cspViolations.push(`page error: ${err.message}`) })
    const email = uniqueEmail('browser')

    // Sign up.
    await page.goto(`${gw.url}/console#signup`)
    await page.getByLabel('Email').fill(email)
    await page.getByLabel('Password').fill(PASSWORD)
    await page.screenshot(shot('01-signup'))
    const [signupRes] = await Promise.all([
      page.waitForResponse((r) => r.url().endsWith('/console/v1/signup')),
      page.getByRole('button', { name: 'Sign up' }).click()
    ])
    t.equal(signupRes.status(), 201, 'signed up')
    await page.waitForURL(/#verify/)

    // Verify with the code the outbox holds: the account exists from then on.
    const code = await outboxCode(gw.url, ADMIN_TOKEN, email)
    await page.getByLabel('Code from the email').fill(code)
    await page.screenshot(shot('02-verify'))
    const [verifyRes] = await Promise.all([
      page.waitForResponse((r) => r.url().endsWith('/console/v1/verify')),
      page.getByRole('button', { name: 'Verify' }).click()
    ])
    const accountId = (await verifyRes.json() as { account_id: string }).account_id
    await page.waitForURL(/#signin/)

    // Money for the calls, then sign in.
    const credit = await fetch(`${gw.url}/admin/v1/accounts/${accountId}/credits`, {
      method: 'POST', headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' }, body: JSON.stringify({ amount: '5.00' })
    })
    t.equal(credit.status, 200, 'credited through the admin API')
    await page.getByLabel('Password').fill(PASSWORD)
    await page.getByRole('button', { name: 'Sign in' }).click()
    await page.waitForURL(/#dashboard/)
    await page.locator('#balance').waitFor()
    t.equal(Number(await page.locator('#balance').textContent()), 5, 'the balance on the dashboard')
    const cookies = await context.cookies()
    const session = cookies.find((c) => c.name === 'gw_console')
    t.ok(session?.httpOnly === true && session.sameSite === 'Strict', 'HttpOnly, SameSite=Strict session cookie')
    t.equal(await page.evaluate('document.cookie'), '', 'the script cannot read the session cookie')
    await page.screenshot(shot('03-dashboard-empty'))

    // Create a key: the plaintext shown once, with a copy button.
    await page.getByRole('link', { name: 'Keys' }).click()
    await page.getByLabel('Name').fill('browser app')
    await page.getByRole('button', { name: 'Create key' }).click()
    const secret = page.locator('#secret-value')
    await secret.waitFor()
    const key = (await secret.textContent()) ?? ''
    t.match(key, /^sk-/, 'the new key is shown')
    await page.getByRole('button', { name: 'Copy' }).click()
    t.equal(await page.evaluate('navigator.clipboard.readText()'), key, 'copy puts the key on the clipboard')
    await page.screenshot(shot('04-key-created'))

    // Call the gateway with it through the OpenAI SDK.
    const openai = new OpenAI({ apiKey: key, baseURL: `${gw.url}/v1`, maxRetries: 0 })
    const completion = await openai.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hello from the browser test' }] })
    t.ok(completion.choices.length > 0, 'the SDK call answered')
    // The row is written once the charge settled, a moment after the answer: wait for it, as
    // every other test reading the log right after an answer does.
    await waitForRows([gw], 1, 30_000, accountId)

    // The dashboard shows the request and its charge, and the lower balance.
    await page.getByRole('link', { name: 'Dashboard' }).click()
    const row = page.locator('tr[data-request-id]').first()
    await row.waitFor()
    const cost = (await row.locator('td.cost').textContent()) ?? ''
    t.ok(Number(cost) > 0, `the charge is on the dashboard (${cost})`)
    t.match((await row.textContent()) ?? '', /openai\/gpt-4o-mini/, 'with its model')
    const balance = Number(await page.locator('#balance').textContent())
    t.ok(Math.abs(balance - (5 - Number(cost))) < 1e-9, `the balance went down by the charge (${balance})`)
    t.match((await page.locator('svg.chart').getAttribute('aria-label')) ?? '', /Spend per day/, 'the spend chart')
    await page.screenshot(shot('05-dashboard-charged'))

    // Restrict the key to another model: MODEL_ACCESS_DENIED.
    await page.getByRole('link', { name: 'Keys' }).click()
    await page.getByRole('button', { name: 'Restrict browser app' }).click()
    await page.getByLabel('Allowed models for browser app').fill('openai/gpt-4o')
    await page.getByRole('button', { name: 'Save models' }).click()
    await page.locator('tr[data-key-id] td', { hasText: 'openai/gpt-4o' }).first().waitFor()
    await page.screenshot(shot('06-key-restricted'))
    const denied = await openai.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }).then(() => null, (err: unknown) => err)
    t.ok(denied instanceof OpenAI.APIError, 'the SDK raises an API error')
    t.equal((denied as InstanceType<typeof OpenAI.APIError>).status, 403, 'restricted: HTTP 403')
    t.equal((denied as InstanceType<typeof OpenAI.APIError>).code, 'MODEL_ACCESS_DENIED', 'restricted: MODEL_ACCESS_DENIED')

    // Revoke it, confirming the dialog: AUTH_INVALID_API_KEY.
    page.once('dialog', (d) => { d.accept().catch(() => {}) })
    await page.getByRole('button', { name: 'Revoke browser app' }).click()
    await page.locator('td.key-status', { hasText: 'revoked' }).waitFor()
    await page.screenshot(shot('07-key-revoked'))
    const invalid = await openai.chat.completions.create({ model: 'openai/gpt-4o', messages: [{ role: 'user', content: 'hi' }] }).then(() => null, (err: unknown) => err)
    t.equal((invalid as InstanceType<typeof OpenAI.APIError>).status, 401, 'revoked: HTTP 401')
    t.equal((invalid as InstanceType<typeof OpenAI.APIError>).code, 'AUTH_INVALID_API_KEY', 'revoked: AUTH_INVALID_API_KEY')

    // The other pages render.
    for (const [link, what] of [['Requests', 'tr[data-request-id]'], ['Models and prices', 'td code'], ['Sessions', 'td']] as const) {
      await page.getByRole('link', { name: link }).click()
      await page.locator(what).first().waitFor()
      await page.screenshot(shot(`08-${link.toLowerCase().replace(/ /g, '-')}`))
    }
    await page.getByRole('button', { name: 'Sign out' }).click()
    await page.waitForURL(/#signin/)

    // Forgot the password: a reset code by mail, a new password, sign in with it.
    await page.getByRole('link', { name: 'Forgot your password?' }).click()
    await page.waitForURL(/#reset/)
    const status = page.locator('#status')
    await page.getByLabel('Email', { exact: true }).fill(email)
    const [resetRes] = await Promise.all([
      page.waitForResponse((r) => r.url().endsWith('/console/v1/password/reset')),
      page.getByRole('button', { name: 'Send reset code' }).click()
    ])
    t.equal(resetRes.status(), 202, 'reset requested')
    t.equal(await status.textContent(), 'If the address has an account, a reset code is on its way.', 'the page says a code may be on its way')
    const resetCode = await outboxCode(gw.url, ADMIN_TOKEN, email)
    await page.getByLabel('Code from the email').fill(resetCode)
    await page.getByLabel('New password').fill(NEW_PASSWORD)
    await page.screenshot(shot('09-reset'))
    await page.getByRole('button', { name: 'Set new password' }).click()
    await page.waitForURL(/#signin/)
    t.equal(await status.textContent(), 'Password changed; every session was signed out. Sign in with the new password.', 'the page says the password changed')
    t.equal(await page.getByLabel('Email', { exact: true }).inputValue(), email, 'the email is filled in')
    await page.getByLabel('Password').fill(PASSWORD)
    await page.getByRole('button', { name: 'Sign in' }).click()
    await status.filter({ hasText: 'AUTH_CREDENTIALS_INVALID' }).waitFor()
    await page.getByLabel('Password').fill(NEW_PASSWORD)
    await page.getByRole('button', { name: 'Sign in' }).click()
    await page.waitForURL(/#dashboard/)
    await page.locator('#balance').waitFor()
    t.pass('signed in with the new password')
    await page.getByRole('button', { name: 'Sign out' }).click()
    await page.waitForURL(/#signin/)

    // Code requests for one address are throttled: what a person sees. The sign-up and the reset
    // above each mailed one code; the hour's budget allows `mails_per_email_per_hour`.
    await page.goto(`${gw.url}/console#reset?email=${encodeURIComponent(email)}`)
    const budget = gw.config.console.mails_per_email_per_hour
    const statuses: number[] = []
    for (let i = 3; i <= budget; i++) {
      const [res] = await Promise.all([
        page.waitForResponse((r) => r.url().endsWith('/console/v1/password/reset')),
        page.getByRole('button', { name: 'Send reset code' }).click()
      ])
      statuses.push(res.status())
    }
    t.same(statuses, Array(budget - 2).fill(202), `${budget} code mails in the hour`)
    const [limited] = await Promise.all([
      page.waitForResponse((r) => r.url().endsWith('/console/v1/password/reset')),
      page.getByRole('button', { name: 'Send reset code' }).click()
    ])
    t.equal(limited.status(), 429, 'the next request is throttled')
    const wait = Number(limited.headers()['retry-after'])
    t.ok(wait > 3000 && wait <= 3600, `Retry-After: the rest of the hour (${wait} s)`)
    await status.filter({ hasText: 'Too many' }).waitFor()
    t.equal(await status.textContent(), `Too many attempts. Try again in ${Math.ceil(wait / 60)} minutes.`, 'the page says to wait, and how long')
    t.equal(await status.getAttribute('class'), 'error', 'shown as an error')
    await page.screenshot(shot('10-throttled'))
    t.same(cspViolations, [], 'no CSP violation and no script error on any page')
  })
}
