// The console's heavy reads bounded per account on each instance (plugins/apps/console/read-gate.ts),
// against a running gateway on both stores: usage summaries and request-log / ledger page rows per
// minute, refused with 429 and the rest of the minute, another account unaffected, the budget
// back after the minute; and one read of a route in flight per account. Without the bound one
// tenant's read loops took other tenants' model-call p50 from 15 ms to 5.3 s (docs/console.md).
import t from 'tap'
import { PAGE_ROWS_PER_MINUTE, ReadGate, USAGE_PER_MINUTE } from '../plugins/apps/console/read-gate.js'
import { startTestGateway, type Backend } from './helpers/gateway.js'
import { signedInClient } from './helpers/console.js'
import { CONSOLE_ADMIN_TOKEN as ADMIN_TOKEN, consoleTestConfig, expectCode } from './helpers/console-api-suite.js'
import { ManualClock } from './helpers/store.js'

t.setTimeout(120_000)

async function status (res: Response): Promise<number> {
  await res.arrayBuffer()
  return res.status
}

for (const backend of ['sqlite', 'pg'] as Backend[]) {
  t.test(`heavy console reads per account and minute (${backend})`, async (t) => {
    const cfg = consoleTestConfig()
    t.teardown(cfg.remove)
    const clock = new ManualClock(new Date())
    const gw = await startTestGateway({ backend, configFile: cfg.file, services: { clock }, server: { adminToken: ADMIN_TOKEN } })
    t.teardown(() => gw.close())
    const a = await signedInClient(gw.url, ADMIN_TOKEN)
    const b = await signedInClient(gw.url, ADMIN_TOKEN)

    const usage: number[] = []
    for (let i = 0; i <= USAGE_PER_MINUTE; i++) usage.push(await status(await a.call('GET', '/usage?days=90')))
    t.same(usage, [...Array<number>(USAGE_PER_MINUTE).fill(200), 429], `${USAGE_PER_MINUTE} usage summaries a minute, then 429`)
    const refused = await a.call('GET', '/usage')
    t.equal(refused.headers.get('retry-after'), '60', 'Retry-After: the rest of the minute (the clock stands still)')
    await expectCode(t, refused, 429, 'LIMIT_RATE_EXCEEDED')
    t.equal(await status(await b.call('GET', '/usage?days=90')), 200, 'another account has its own budget')

    const pages = PAGE_ROWS_PER_MINUTE / 1000
    const rows: number[] = []
    for (let i = 0; i < pages - 1; i++) rows.push(await status(await a.call('GET', '/requests?limit=1000')))
    rows.push(await status(await a.call('GET', '/ledger?limit=200')))
    rows.push(await status(await a.call('GET', '/requests?limit=800')))
    rows.push(await status(await a.call('GET', '/requests?limit=1')))
    rows.push(await status(await a.call('GET', '/ledger?limit=1')))
    t.same(rows, [...Array<number>(pages - 1).fill(200), 200, 200, 429, 429], `${PAGE_ROWS_PER_MINUTE} rows of request-log and ledger pages a minute, then 429`)
    t.equal(await status(await a.call('GET', '/requests?limit=1001')), 400, 'a page past the maximum is still a 400, spending nothing')
    t.equal(await status(await a.call('GET', '/wallet')), 200, 'the light reads are not counted')
    t.equal(await status(await b.call('GET', '/requests?limit=1000')), 200, 'another account is not affected')

    clock.advance(60_000)
    t.equal(await status(await a.call('GET', '/usage?days=90')), 200, 'a minute later: summaries again')
    t.equal(await status(await a.call('GET', '/requests?limit=1000')), 200, 'and pages')
  })
}

t.test('one read of a route in flight per account; others and other routes go on', async (t) => {
  const gate = new ReadGate(() => new Date())
  let finish: () => void = () => {}
  const running = gate.run('acct_a', 'requests', { rows: 1 }, async () => { await new Promise<void>((resolve) => { finish = resolve }) })
  await t.rejects(gate.run('acct_a', 'requests', { rows: 1 }, async () => 'second'), { code: 'LIMIT_RATE_EXCEEDED', details: { retryAfterSeconds: 1 } }, 'a second read of the route while one runs: 429, Retry-After 1')
  t.equal(await gate.run('acct_a', 'ledger', { rows: 1 }, async () => 'ledger'), 'ledger', 'another route of the account runs')
  t.equal(await gate.run('acct_b', 'requests', { rows: 1 }, async () => 'b'), 'b', 'another account runs')
  finish()
  await running
  t.equal(await gate.run('acct_a', 'requests', { rows: 1 }, async () => 'after'), 'after', 'once it ended, the route runs again')
  await t.rejects(gate.run('acct_a', 'requests', { rows: 1 }, async () => { throw new Error('boom') }), /boom/, 'a read that fails')
  t.equal(await gate.run('acct_a', 'requests', { rows: 1 }, async () => 'freed'), 'freed', 'still frees its place')
})
