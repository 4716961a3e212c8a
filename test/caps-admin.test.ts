// Admin API and CLI of key caps: a key's usage against each cap (GET /admin/v1/keys/{id}/usage),
// the reset of its used quota, and account-level allowed models (MODEL_ACCESS_DENIED says which
// list refused: the key's or the account's).
import { join } from 'node:path'
import t from 'tap'
import { accountsCommand, keysCommand } from '../plugins/apps/admin/cli.js'
import type { CommandIo } from '../plugins/apps/admin/cli-runtime.js'
import { parseMoney } from '../plugins/foundation/pricing/money.js'
import { adminClient } from './helpers/billing.js'
import { startTestGateway } from './helpers/gateway.js'
import { ManualClock, TEST_SECRET } from './helpers/store.js'

const ADMIN_TOKEN = 'caps-admin-token-0123456789abcdefgh'
// 2026-03-08 20:00 in New York (EDT, after the spring-forward): the key's day ends at 04:00 UTC.
const clock = new ManualClock('2026-03-09T00:00:00.000Z')
const gw = await startTestGateway({ services: { clock }, server: { adminToken: ADMIN_TOKEN } })
t.teardown(() => gw.close())
const admin = adminClient(gw, ADMIN_TOKEN)

const chat = async (key: string, model: string): Promise<Response> => await fetch(`${gw.url}/v1/chat/completions`, {
  method: 'POST',
  headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
  body: JSON.stringify({ model, max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] })
})

async function cli (group: 'accounts' | 'keys', args: string[]): Promise<{ code: number, json: any }> {
  let stdout = ''
  let stderr = ''
  const io: CommandIo = {
    env: { GATEWAY_CONFIG: join(process.cwd(), 'gateway.yaml'), GATEWAY_SECRET: TEST_SECRET, GATEWAY_DATA_DIR: gw.location },
    stdout: { write: (text: string) => { stdout += text } },
    stderr: { write: (text: string) => { stderr += text } }
  }
  const code = await (group === 'keys' ? keysCommand : accountsCommand)(args, io)
  return { code, json: JSON.parse(code === 0 ? stdout : stderr) }
}

t.test('usage against each cap; the reset of the used quota', async (t) => {
  const created = await admin<{ id: string, key: string }>('POST', `/accounts/${gw.account.id}/keys`, {
    name: 'capped', quota: '10.00', daily_spend_cap: '5.00', monthly_spend_cap: '8.00', daily_image_cap: 3, timezone: 'America/New_York'
  })
  t.equal(created.status, 201)
  const id = created.json.id
  const served = await chat(created.json.key, 'openai/gpt-4o-mini')
  await served.arrayBuffer()
  t.equal(served.status, 200)
  let usage: any
  for (let i = 0; i < 200; i++) {
    usage = (await admin<any>('GET', `/keys/${id}/usage`)).json
    if (usage.data[0].held === '0.00' && usage.data[0].used !== '0.00') break
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
  t.equal(usage.key_id, id)
  t.equal(usage.timezone, 'America/New_York')
  const [quota, daily, monthly, images] = usage.data
  t.match(quota, { cap: 'quota', limit: '10.00', held: '0.00', resets_at: null })
  t.ok(parseMoney(quota.used) > 0n, `the served request is used: ${quota.used}`)
  t.match(daily, { cap: 'daily_spend_cap', limit: '5.00', used: quota.used, held: '0.00', resets_at: '2026-03-09T04:00:00.000Z' })
  t.match(monthly, { cap: 'monthly_spend_cap', limit: '8.00', used: quota.used, held: '0.00' })
  t.same(images, { cap: 'daily_image_cap', limit: 3, used: 0, held: 0, resets_at: '2026-03-10T00:00:00.000Z' })

  const reset = await admin<any>('POST', `/keys/${id}/usage/reset`)
  t.equal(reset.status, 200)
  t.same(reset.json.data.map((c: { used: unknown }) => c.used), ['0.00', '0.00', '0.00', 0], 'every used count is 0 after the reset')
  const body = await admin<any>('POST', `/keys/${id}/usage/reset`, { extra: 1 })
  t.equal(body.status, 400, 'a reset with a body is refused by the route schema')
  t.equal(body.json.error.code, 'REQUEST_INVALID')
  const missing = await admin<any>('GET', '/keys/key_missing/usage')
  t.equal(missing.status, 404)
  t.equal(missing.json.error.code, 'AUTH_API_KEY_NOT_FOUND')

  const viaCli = await cli('keys', ['usage', id])
  t.equal(viaCli.code, 0, 'model-gateway keys usage ID')
  t.equal(viaCli.json.data[0].cap, 'quota')
  const resetCli = await cli('keys', ['reset-usage', id])
  t.equal(resetCli.code, 0, 'model-gateway keys reset-usage ID')
})

t.test('account-level allowed models; MODEL_ACCESS_DENIED names the list that refused', async (t) => {
  const account = gw.account.id
  const set = await admin<any>('PATCH', `/accounts/${account}`, { allowed_models: ['openai/gpt-4o'] })
  t.equal(set.status, 200)
  t.same(set.json.allowed_models, ['openai/gpt-4o'])
  const refused = await chat(gw.key, 'openai/gpt-4o-mini')
  t.equal(refused.status, 403)
  const err = (await refused.json() as { error: { code: string, message: string } }).error
  t.equal(err.code, 'MODEL_ACCESS_DENIED')
  t.match(err.message, /account's allowed models/, 'the account\'s list refused')
  const allowed = await chat(gw.key, 'openai/gpt-4o')
  await allowed.arrayBuffer()
  t.equal(allowed.status, 200, 'a model on the account\'s list is served')

  const keyLimited = await admin<{ key: string }>('POST', `/accounts/${account}/keys`, { name: 'narrow', allowed_models: ['openai/gpt-4o-mini'] })
  const byKey = await chat(keyLimited.json.key, 'openai/gpt-4o')
  t.equal(byKey.status, 403)
  t.match((await byKey.json() as { error: { message: string } }).error.message, /API key's allowed models/, 'the key\'s list refused')
  const byAccount = await chat(keyLimited.json.key, 'openai/gpt-4o-mini')
  t.match((await byAccount.json() as { error: { message: string } }).error.message, /account's allowed models/, 'on the key\'s list but not the account\'s')

  for (const bad of [[], ['no/such-model'], ['openai/gpt-4o', 'openai/gpt-4o'], 'openai/gpt-4o', 5]) {
    const r = await admin<any>('PATCH', `/accounts/${account}`, { allowed_models: bad })
    t.equal(r.status, 400, `allowed_models ${JSON.stringify(bad)} refused`)
    t.equal(r.json.error.param, 'allowed_models')
  }

  const viaCli = await cli('accounts', ['set-models', account, '--all'])
  t.equal(viaCli.code, 0, 'model-gateway accounts set-models ID --all')
  t.equal(viaCli.json.allowed_models, null)
  t.equal((await gw.services.store.accounts.get(account))?.allowedModels, null, 'the CLI wrote the store the gateway reads')
  const narrowed = await cli('accounts', ['set-models', account, '--models', 'openai/gpt-4o,openai/gpt-4o-mini'])
  t.same(narrowed.json.allowed_models, ['openai/gpt-4o', 'openai/gpt-4o-mini'], 'model-gateway accounts set-models ID --models …')
  const both = await cli('accounts', ['set-models', account])
  t.equal(both.code, 2, 'neither --models nor --all: a usage error')
  // (The CLI in another process reaches running gateways through the Redis key bus; here the API clears it.)
  t.equal((await admin<any>('PATCH', `/accounts/${account}`, { allowed_models: null })).json.allowed_models, null)
  const again = await chat(gw.key, 'openai/gpt-4o-mini')
  await again.arrayBuffer()
  t.equal(again.status, 200, 'cleared: every model again (the key cache saw the change)')
})

t.test('platform image pause from the admin API: every instance sees it within 1 s; DELETE lifts it; 00:00 UTC ends it', async (t) => {
  const second = await startTestGateway({ mock: gw.mock, shareStoreWith: gw, services: { clock } })
  t.teardown(() => second.close())
  clock.advance(Date.parse('2026-03-09T22:00:00.000Z') - clock.now().getTime())
  const image = async (base: string): Promise<Response> => await fetch(`${base}/v1/images/generations`, {
    method: 'POST',
    headers: { ...gw.auth, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'openai/gpt-image-1', prompt: 'a cat' })
  })
  /** Bounded: the instances' caches hold a read for 1 s. */
  const statusWithin = async (base: string, want: number): Promise<Response> => {
    for (let i = 0; ; i++) {
      const res = await image(base)
      if (res.status === want || i === 60) return res
      await res.arrayBuffer()
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
  }
  const before = await image(second.url)
  await before.arrayBuffer()
  t.equal(before.status, 200, 'not paused: served')
  t.same((await admin('GET', '/images/pause')).json, { paused: false, day: '2026-03-09', resumes_at: null })
  const on = await admin('POST', '/images/pause')
  t.same(on.json, { paused: true, day: '2026-03-09', resumes_at: '2026-03-10T00:00:00.000Z' }, 'paused until 00:00 UTC')
  t.equal((await admin('POST', '/images/pause', { day: 'tomorrow' })).status, 400, 'a body is refused by the route schema')
  for (const base of [gw.url, second.url]) {
    const res = await statusWithin(base, 503)
    t.equal(res.status, 503, 'refused on every instance')
    t.equal(res.headers.get('x-gateway-error-code'), 'LIMIT_IMAGE_PLATFORM_PAUSED')
    t.equal(res.headers.get('retry-after'), '7200', 'Retry-After: until 00:00 UTC')
    await res.arrayBuffer()
  }
  const text = await chat(gw.key, 'openai/gpt-4o-mini')
  await text.arrayBuffer()
  t.equal(text.status, 200, 'other features unaffected')
  clock.advance(2 * 3600_000) // 00:00 UTC the next day
  const resumed = await statusWithin(second.url, 200)
  await resumed.arrayBuffer()
  t.equal(resumed.status, 200, 'at 00:00 UTC the pause ends by itself')

  await admin('POST', '/images/pause')
  const paused = await statusWithin(gw.url, 503)
  await paused.arrayBuffer()
  t.equal(paused.status, 503, 'paused again')
  t.same((await admin('DELETE', '/images/pause')).json, { paused: false, day: '2026-03-10', resumes_at: null })
  for (const base of [gw.url, second.url]) {
    const res = await statusWithin(base, 200)
    await res.arrayBuffer()
    t.equal(res.status, 200, 'DELETE lifts it on every instance')
  }
})
