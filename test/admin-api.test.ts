// Admin HTTP API through fastify.inject, against SQLite and PostgreSQL: the whole account and
// key lifecycle, every refusal with its code, status, chat envelope and error headers.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Writable } from 'node:stream'
import Fastify, { type FastifyInstance, type LightMyRequestResponse } from 'fastify'
import t, { type Test } from 'tap'
import { ADMIN_PREFIX, adminRoutes, type AdminRoutesOptions } from '../plugins/apps/admin/index.js'
import { loadConfig } from '../plugins/apps/gateway/config.js'
import { compileCatalogue, type ErrorCode } from '../plugins/foundation/errors/index.js'
import { modelGateway, newRequestId } from '../plugins/apps/gateway/index.js'
import { type InvalidationMessage, lookupHash } from '../plugins/foundation/keys/index.js'
import type { Store } from '../plugins/foundation/store/index.js'
import { ManualClock, TEST_SECRET, sqliteTestBackend, testBackends } from './helpers/store.js'
import { repoPath } from './helpers/paths.js'

const REPO_CONFIG = repoPath('gateway.yaml')
const { config } = loadConfig(REPO_CONFIG, {})
const catalogue = compileCatalogue(config.errors, config.server)
const TOKEN = 'admin-token-for-tests-0123456789'
const LEGACY = 'gw_live_0a1b2c3d4e5f6a7b8c9d'

type Tap = Test

interface Answer {
  status: number
  headers: LightMyRequestResponse['headers']
  body: string
  json: Record<string, any>
}

async function adminApp (store: Store, clock: ManualClock, extra: Partial<AdminRoutesOptions> = {}, logs?: string[]): Promise<FastifyInstance> {
  const stream = new Writable({ write (chunk, _enc, done) { logs?.push(String(chunk)); done() } })
  const app = Fastify({ genReqId: newRequestId, logger: logs ? { level: 'trace', stream } : false })
  await app.register(adminRoutes, { prefix: ADMIN_PREFIX, store, config, catalogue, token: TOKEN, clock, ...extra })
  await app.ready()
  return app
}

function caller (app: FastifyInstance) {
  return async (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Answer> => {
    const res = await app.inject({
      method,
      url: `${ADMIN_PREFIX}${path}`,
      headers: { authorization: `Bearer ${TOKEN}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
      ...(body === undefined ? {} : { payload: typeof body === 'string' ? body : JSON.stringify(body) }),
    })
    let json: Record<string, any> = {}
    try { json = res.json() } catch { /* not JSON: json stays empty and the test says so */ }
    return { status: res.statusCode, headers: res.headers, body: res.body, json }
  }
}

/** The chat envelope and every error header of the spec, for one refusal. */
function isError (t: Tap, res: Answer, code: ErrorCode, param?: string | null): void {
  const entry = catalogue.get(code)
  t.equal(entry.code, code, `${code} is in the catalogue`)
  t.equal(res.status, entry.status, `${code} answers ${entry.status}`)
  const e = res.json.error
  t.ok(e, 'chat envelope')
  if (!e) return
  t.equal(e.code, code)
  t.equal(e.reference, entry.reference)
  t.equal(e.documentation_url, entry.documentationUrl)
  t.type(e.message, 'string')
  t.match(e.request_id, /^req_[0-9a-f]{32}$/)
  t.same(e.retry, { retryable: false, strategy: 'NONE' })
  t.same(e.billing, { status: 'NOT_BILLED' })
  t.equal(e.type, entry.type.chat)
  if (param !== undefined) t.equal(e.param, param, `param is ${param}`)
  t.equal(res.headers['x-request-id'], e.request_id)
  t.equal(res.headers['x-gateway-error-code'], code)
  t.equal(res.headers['x-gateway-error-reference'], entry.reference)
  t.equal(res.headers.link, `<${entry.documentationUrl}>; rel="describedby"`)
  t.equal(res.headers['content-language'], 'en')
  t.equal(res.headers['x-gateway-billed'], 'false')
  t.equal(res.headers['cache-control'], 'no-store')
  t.match(res.headers['content-type'], /^application\/json/)
}

function isOk (t: Tap, res: Answer, status = 200): void {
  t.equal(res.status, status, `answers ${status}: ${res.body.slice(0, 200)}`)
  t.equal(res.headers['cache-control'], 'no-store')
  t.match(res.headers['x-request-id'], /^req_/)
  t.match(res.headers['content-type'], /^application\/json/)
}

const KEY_FIELDS = [
  'id', 'account_id', 'name', 'prefix', 'status', 'allowed_models', 'expires_at', 'active', 'revoked', 'revoked_at',
  'timezone', 'quota', 'daily_spend_cap', 'monthly_spend_cap', 'daily_image_cap', 'tags', 'rate_limit_policy',
  'legacy', 'created_at',
].sort()

for (const backend of testBackends()) {
  t.test(`admin API (${backend.name})`, async (t) => {
    const clock = new ManualClock('2030-01-01T00:00:00.000Z')
    const store = await backend.open({ clock })
    const app = await adminApp(store, clock)
    t.teardown(async () => {
      await app.close()
      await backend.cleanup()
    })
    const call = caller(app)
    const published: InvalidationMessage[] = []
    store.bus.subscribe((m) => published.push(m))

    t.test('the admin token is required and compared exactly', async (t) => {
      const none = await call('GET', '/accounts', undefined, { authorization: '' })
      isError(t, none, 'AUTH_REQUIRED', null)
      t.match(none.headers['www-authenticate'], /^Bearer /)
      isError(t, await call('GET', '/accounts', undefined, { authorization: `Basic ${TOKEN}` }), 'AUTH_REQUIRED')
      isError(t, await call('GET', '/accounts', undefined, { authorization: `Bearer ${TOKEN}x` }), 'AUTH_FORBIDDEN')
      isError(t, await call('GET', '/accounts', undefined, { authorization: `Bearer ${TOKEN.slice(0, -1)}` }), 'AUTH_FORBIDDEN')
      isError(t, await call('GET', '/accounts', undefined, { authorization: 'Bearer ' }), 'AUTH_REQUIRED')
      isOk(t, await call('GET', '/accounts', undefined, { authorization: `bearer ${TOKEN}` }))
      // Unknown paths do not tell an unauthenticated caller what exists.
      isError(t, await call('GET', '/nothing-here', undefined, { authorization: '' }), 'AUTH_REQUIRED')
      // Nothing was read or written for refused calls.
      isError(t, await call('POST', '/accounts', { name: 'x' }, { authorization: 'Bearer wrong' }), 'AUTH_FORBIDDEN')
      t.same((await call('GET', '/accounts')).json.data, [])
    })

    t.test('unknown paths and methods answer REQUEST_ROUTE_NOT_FOUND in the chat envelope', async (t) => {
      isError(t, await call('GET', '/nothing-here'), 'REQUEST_ROUTE_NOT_FOUND')
      isError(t, await call('DELETE', '/accounts'), 'REQUEST_ROUTE_NOT_FOUND')
      isError(t, await call('POST', '/models', {}), 'REQUEST_ROUTE_NOT_FOUND')
    })

    t.test('JSON only: other media types, bad JSON and oversized bodies are refused', async (t) => {
      isError(t, await call('POST', '/accounts', 'name=x', { 'content-type': 'application/x-www-form-urlencoded' }), 'REQUEST_MEDIA_TYPE_UNSUPPORTED')
      isError(t, await call('POST', '/accounts', 'x', { 'content-type': 'text/plain' }), 'REQUEST_MEDIA_TYPE_UNSUPPORTED')
      isError(t, await call('POST', '/accounts', '{"name": '), 'REQUEST_INVALID', 'body')
      isError(t, await call('POST', '/accounts', '[1]'), 'REQUEST_INVALID', 'body')
      isError(t, await call('POST', '/accounts', JSON.stringify({ name: 'x'.repeat(1024 * 1024) })), 'REQUEST_TOO_LARGE')
      isError(t, await call('POST', '/accounts'), 'REQUEST_INVALID', 'body')
    })

    let accountId = ''
    t.test('accounts: create, get, list, suspend, reactivate, set tier', async (t) => {
      const created = await call('POST', '/accounts', { name: '  Acme  ' })
      isOk(t, created, 201)
      t.same(created.json, { id: created.json.id, name: 'Acme', status: 'active', tier: 'free', topped_up: false, allowed_models: null, created_at: '2030-01-01T00:00:00.000Z' })
      t.match(created.json.id, /^acct_[0-9A-Za-z]{22}$/)
      accountId = created.json.id

      clock.advance(1000)
      const gold = await call('POST', '/accounts', { name: 'Gold', tier: 'enterprise' })
      isOk(t, gold, 201)
      t.equal(gold.json.tier, 'enterprise')

      const got = await call('GET', `/accounts/${accountId}`)
      isOk(t, got)
      t.same(got.json, created.json)

      const all = await call('GET', '/accounts')
      isOk(t, all)
      t.same(all.json, { data: [created.json, gold.json], has_more: false, next_after: null })
      const first = await call('GET', '/accounts?limit=1')
      t.same(first.json, { data: [created.json], has_more: true, next_after: accountId })
      const second = await call('GET', `/accounts?limit=1&after=${accountId}`)
      t.same(second.json, { data: [gold.json], has_more: false, next_after: null })

      published.length = 0
      const suspended = await call('PATCH', `/accounts/${accountId}`, { status: 'suspended' })
      isOk(t, suspended)
      t.equal(suspended.json.status, 'suspended')
      t.same(published, [{ kind: 'account', id: accountId }], 'running instances are told')
      t.equal((await call('GET', `/accounts/${accountId}`)).json.status, 'suspended')
      const back = await call('PATCH', `/accounts/${accountId}`, { status: 'active', tier: 'standard', name: 'Acme Ltd' })
      isOk(t, back)
      t.same(back.json, { ...created.json, name: 'Acme Ltd', tier: 'standard' })
    })

    t.test('accounts: every refusal', async (t) => {
      isError(t, await call('POST', '/accounts', {}), 'REQUEST_INVALID', 'name')
      isError(t, await call('POST', '/accounts', { name: '   ' }), 'REQUEST_INVALID', 'name')
      isError(t, await call('POST', '/accounts', { name: 7 }), 'REQUEST_INVALID', 'name')
      isError(t, await call('POST', '/accounts', { name: 'x'.repeat(101) }), 'REQUEST_INVALID', 'name')
      isError(t, await call('POST', '/accounts', { name: 'a\u0000b' }), 'REQUEST_INVALID', 'name')
      isError(t, await call('POST', '/accounts', { name: 'x', tier: 'platinum' }), 'REQUEST_INVALID', 'tier')
      isError(t, await call('POST', '/accounts', { name: 'x', tier: 'toString' }), 'REQUEST_INVALID', 'tier')
      isError(t, await call('POST', '/accounts', { name: 'x', balance: '5' }), 'REQUEST_INVALID', 'balance')
      isError(t, await call('PATCH', `/accounts/${accountId}`, { status: 'deleted' }), 'REQUEST_INVALID', 'status')
      isError(t, await call('PATCH', `/accounts/${accountId}`, { tier: 'platinum' }), 'REQUEST_INVALID', 'tier')
      isError(t, await call('PATCH', `/accounts/${accountId}`, { topped_up: true }), 'REQUEST_INVALID', 'topped_up')
      isError(t, await call('GET', '/accounts?limit=0'), 'REQUEST_INVALID', 'limit')
      isError(t, await call('GET', '/accounts?limit=1001'), 'REQUEST_INVALID', 'limit')
      isError(t, await call('GET', '/accounts?limit=abc'), 'REQUEST_INVALID', 'limit')
      isError(t, await call('GET', '/accounts?after=acct_nope'), 'REQUEST_INVALID', 'after')
      isError(t, await call('GET', '/accounts?sort=desc'), 'REQUEST_INVALID', 'sort')
      const missing = await call('GET', '/accounts/acct_missing')
      isError(t, missing, 'REQUEST_ROUTE_NOT_FOUND', 'account_id')
      t.match(missing.json.error.message, /Account not found/)
      isError(t, await call('PATCH', '/accounts/acct_missing', { status: 'suspended' }), 'REQUEST_ROUTE_NOT_FOUND', 'account_id')
      isError(t, await call('GET', '/accounts/acct_missing/keys'), 'REQUEST_ROUTE_NOT_FOUND', 'account_id')
      isError(t, await call('POST', '/accounts/acct_missing/keys', { name: 'k' }), 'REQUEST_ROUTE_NOT_FOUND', 'account_id')
      isError(t, await call('POST', '/accounts/acct_missing/keys/import-legacy', { key: LEGACY, name: 'k' }), 'REQUEST_ROUTE_NOT_FOUND', 'account_id')
    })

    let keyId = ''
    let plaintext = ''
    t.test('keys: the plaintext appears in the create and reveal answers only', async (t) => {
      const created = await call('POST', `/accounts/${accountId}/keys`, {
        name: 'ci',
        allowed_models: ['openai/gpt-4o', 'anthropic/claude-sonnet-4'],
        expires_at: '2031-06-30T12:00:00Z',
        timezone: 'Europe/Paris',
        quota: '25',
        daily_spend_cap: '1.5',
        monthly_spend_cap: '0.000000001',
        daily_image_cap: 10,
        tags: ['team:ml', 'env.prod'],
        rate_limit_policy: 'standard',
      })
      isOk(t, created, 201)
      plaintext = created.json.key
      keyId = created.json.id
      t.match(plaintext, /^sk-[0-9A-Za-z]{49}$/)
      t.match(keyId, /^key_[0-9A-Za-z]{22}$/)
      t.same(created.json, {
        id: keyId,
        account_id: accountId,
        name: 'ci',
        prefix: plaintext.slice(0, 8),
        status: 'active',
        allowed_models: ['openai/gpt-4o', 'anthropic/claude-sonnet-4'],
        expires_at: '2031-06-30T12:00:00.000Z',
        active: true,
        revoked: false,
        revoked_at: null,
        timezone: 'Europe/Paris',
        quota: '25.00',
        daily_spend_cap: '1.50',
        monthly_spend_cap: '0.000000001',
        daily_image_cap: 10,
        tags: ['team:ml', 'env.prod'],
        rate_limit_policy: 'standard',
        legacy: false,
        created_at: clock.now().toISOString(),
        key: plaintext,
      })
      // Money is kept in nano-units inside.
      const stored = await store.keys.get(keyId)
      t.equal(stored?.quota, 25_000_000_000n)
      t.equal(stored?.monthlySpendCap, 1n)

      const got = await call('GET', `/keys/${keyId}`)
      isOk(t, got)
      t.same(Object.keys(got.json).sort(), KEY_FIELDS, 'get has every field but the plaintext')
      t.notOk(got.body.includes(plaintext))
      const listed = await call('GET', `/accounts/${accountId}/keys`)
      isOk(t, listed)
      t.equal(listed.json.data.length, 1)
      t.same(Object.keys(listed.json.data[0]).sort(), KEY_FIELDS)
      t.same(listed.json.has_more, false)
      t.notOk(listed.body.includes(plaintext), 'list never carries a plaintext')

      const revealed = await call('GET', `/keys/${keyId}/reveal`)
      isOk(t, revealed)
      t.equal(revealed.json.key, plaintext)
      t.same(revealed.json, { ...got.json, key: plaintext })
    })

    t.test('keys: defaults of a minimal key', async (t) => {
      const res = await call('POST', `/accounts/${accountId}/keys`, { name: 'min' })
      isOk(t, res, 201)
      t.match(res.json, {
        allowed_models: null,
        expires_at: null,
        active: true,
        timezone: 'UTC',
        quota: null,
        daily_spend_cap: null,
        monthly_spend_cap: null,
        daily_image_cap: null,
        tags: [],
        rate_limit_policy: null,
        legacy: false,
      })
    })

    t.test('keys: update, clear with null, deactivate', async (t) => {
      published.length = 0
      const res = await call('PATCH', `/keys/${keyId}`, { name: 'ci-2', allowed_models: null, quota: null, active: false, tags: [] })
      isOk(t, res)
      t.match(res.json, { id: keyId, name: 'ci-2', allowed_models: null, quota: null, active: false, status: 'inactive', tags: [] })
      t.equal(res.json.daily_spend_cap, '1.50', 'untouched fields stay')
      t.notOk('key' in res.json)
      t.same(published, [{ kind: 'key', id: keyId }], 'running instances drop the cached key')
      const again = await call('PATCH', `/keys/${keyId}`, { active: true, rate_limit_policy: 'free' })
      t.match(again.json, { active: true, status: 'active', rate_limit_policy: 'free' })
    })

    t.test('keys: invalid settings answer AUTH_API_KEY_CONFIGURATION_INVALID naming the field', async (t) => {
      const cases: Array<[string, unknown, string]> = [
        ['name missing', {}, 'name'],
        ['name empty', { name: '' }, 'name'],
        ['expiry in the past', { name: 'k', expires_at: '2029-12-31T23:59:59Z' }, 'expires_at'],
        ['expiry not a date', { name: 'k', expires_at: 'tomorrow' }, 'expires_at'],
        ['unknown model', { name: 'k', allowed_models: ['openai/gpt-9'] }, 'allowed_models'],
        ['bad timezone', { name: 'k', timezone: 'Mars/Olympus' }, 'timezone'],
        ['negative quota', { name: 'k', quota: '-1' }, 'quota'],
        ['quota as a number', { name: 'k', quota: 25 }, 'quota'],
        ['more than 9 decimals', { name: 'k', daily_spend_cap: '0.0000000001' }, 'daily_spend_cap'],
        ['negative image cap', { name: 'k', daily_image_cap: -1 }, 'daily_image_cap'],
        ['too many tags', { name: 'k', tags: Array.from({ length: 21 }, (_, i) => `t${i}`) }, 'tags'],
        ['unknown policy', { name: 'k', rate_limit_policy: 'platinum' }, 'rate_limit_policy'],
        ['unknown field', { name: 'k', allowed_model: ['openai/gpt-4o'] }, 'allowed_model'],
        ['plaintext smuggled in', { name: 'k', key: 'sk-mine' }, 'key'],
        ['body not an object', [{ name: 'k' }], 'body'],
      ]
      for (const [what, body, param] of cases) {
        t.test(what, async (t) => {
          isError(t, await call('POST', `/accounts/${accountId}/keys`, body), 'AUTH_API_KEY_CONFIGURATION_INVALID', param)
        })
      }
      isError(t, await call('PATCH', `/keys/${keyId}`, { name: '' }), 'AUTH_API_KEY_CONFIGURATION_INVALID', 'name')
      isError(t, await call('PATCH', `/keys/${keyId}`, { name: null }), 'AUTH_API_KEY_CONFIGURATION_INVALID', 'name')
      isError(t, await call('PATCH', `/keys/${keyId}`, { timezone: '+05:00' }), 'AUTH_API_KEY_CONFIGURATION_INVALID', 'timezone')
      t.equal((await store.keys.listByAccount(accountId)).length, 2, 'no refused create left a key behind')
    })

    t.test('keys: a policy above the account tier answers LIMIT_API_KEY_POLICY_NOT_ALLOWED', async (t) => {
      // The account is on `standard` now.
      isError(t, await call('POST', `/accounts/${accountId}/keys`, { name: 'k', rate_limit_policy: 'enterprise' }), 'LIMIT_API_KEY_POLICY_NOT_ALLOWED', 'rate_limit_policy')
      isError(t, await call('PATCH', `/keys/${keyId}`, { rate_limit_policy: 'enterprise' }), 'LIMIT_API_KEY_POLICY_NOT_ALLOWED', 'rate_limit_policy')
      isOk(t, await call('PATCH', `/keys/${keyId}`, { rate_limit_policy: 'standard' }))
    })

    t.test('keys: missing keys answer AUTH_API_KEY_NOT_FOUND', async (t) => {
      isError(t, await call('GET', '/keys/key_missing'), 'AUTH_API_KEY_NOT_FOUND', 'key_id')
      isError(t, await call('PATCH', '/keys/key_missing', { name: 'x' }), 'AUTH_API_KEY_NOT_FOUND', 'key_id')
      isError(t, await call('POST', '/keys/key_missing/revoke'), 'AUTH_API_KEY_NOT_FOUND', 'key_id')
      isError(t, await call('GET', '/keys/key_missing/reveal'), 'AUTH_API_KEY_NOT_FOUND', 'key_id')
    })

    t.test('keys: revoke is final', async (t) => {
      published.length = 0
      const at = clock.now().toISOString()
      const revoked = await call('POST', `/keys/${keyId}/revoke`, '', { 'content-type': 'application/json' })
      isOk(t, revoked)
      t.match(revoked.json, { id: keyId, revoked: true, status: 'revoked', revoked_at: at })
      t.notOk('key' in revoked.json)
      t.same(published, [{ kind: 'key', id: keyId }])
      clock.advance(1000)
      const twice = await call('POST', `/keys/${keyId}/revoke`)
      isOk(t, twice)
      t.equal(twice.json.revoked_at, at, 'revoking again keeps the first time')
      isError(t, await call('PATCH', `/keys/${keyId}`, { active: true }), 'AUTH_API_KEY_REVOKED', 'key_id')
      isError(t, await call('PATCH', `/keys/${keyId}`, { name: '' }), 'AUTH_API_KEY_REVOKED', 'key_id')
      isError(t, await call('GET', `/keys/${keyId}/reveal`), 'AUTH_API_KEY_REVOKED', 'key_id')
      const got = await call('GET', `/keys/${keyId}`)
      isOk(t, got)
      t.equal(got.json.status, 'revoked')
    })

    t.test('legacy keys: imported by hash, never revealable', async (t) => {
      const imported = await call('POST', `/accounts/${accountId}/keys/import-legacy`, { key: LEGACY, name: 'old', tags: ['legacy'] })
      isOk(t, imported, 201)
      t.match(imported.json, { account_id: accountId, name: 'old', prefix: LEGACY.slice(0, 8), legacy: true, tags: ['legacy'], status: 'active' })
      t.notOk('key' in imported.json)
      t.notOk(imported.body.includes(LEGACY), 'the answer does not echo the legacy key')
      const found = await store.keys.findByLookupHash(lookupHash(TEST_SECRET, LEGACY))
      t.equal(found?.id, imported.json.id, 'auth finds it by hash')
      isError(t, await call('GET', `/keys/${imported.json.id}/reveal`), 'AUTH_API_KEY_NOT_REVEALABLE', 'key_id')

      isError(t, await call('POST', `/accounts/${accountId}/keys/import-legacy`, { key: LEGACY, name: 'again' }), 'AUTH_API_KEY_CONFIGURATION_INVALID', 'key')
      isError(t, await call('POST', `/accounts/${accountId}/keys/import-legacy`, { key: 'sk-notlegacy', name: 'x' }), 'AUTH_API_KEY_CONFIGURATION_INVALID', 'key')
      isError(t, await call('POST', `/accounts/${accountId}/keys/import-legacy`, { name: 'x' }), 'AUTH_API_KEY_CONFIGURATION_INVALID', 'key')
      isError(t, await call('POST', `/accounts/${accountId}/keys/import-legacy`, { key: 'gw_live_other1', name: '' }), 'AUTH_API_KEY_CONFIGURATION_INVALID', 'name')
      isError(t, await call('POST', `/accounts/${accountId}/keys/import-legacy`, { key: 'gw_live_other1', name: 'x', rate_limit_policy: 'enterprise' }), 'LIMIT_API_KEY_POLICY_NOT_ALLOWED', 'rate_limit_policy')

      await call('POST', `/keys/${imported.json.id}/revoke`)
      isError(t, await call('GET', `/keys/${imported.json.id}/reveal`), 'AUTH_API_KEY_REVOKED', 'key_id')
    })

    t.test('models: the configured catalogue with decimal prices', async (t) => {
      const res = await call('GET', '/models')
      isOk(t, res)
      t.same(res.json.data.map((m: { id: string }) => m.id), config.models.map((m) => m.id))
      const gpt4o = res.json.data.find((m: { id: string }) => m.id === 'openai/gpt-4o')
      t.match(gpt4o.pricing, { unit: 'token', input: '2.50', cached_input: '1.25', output: '10.00', per: 1000000, url_media_item: '0.0037', features: { web_search: { per_use: '0.01' } } }, 'decimal prices, features included')
      t.same(gpt4o, {
        id: 'openai/gpt-4o',
        status: 'active',
        configured_status: 'active',
        stored_status: null,
        status_updated_at: null,
        pricing_complete: true,
        pricing_problems: [],
        operations: ['chat.completions', 'responses'],
        capabilities: ['vision'],
        pricing: config.models.find((m) => m.id === 'openai/gpt-4o')?.pricing,
        fallbacks: ['openai/gpt-4o-mini'],
        max_output_tokens: 16384,
        requires_topup: false,
      })
      t.match(res.json.data.find((m: { id: string }) => m.id === 'genai/veo-3'), { status: 'active', pricing: { unit: 'job', unit_price: '0.40' } })
      t.equal(res.json.has_more, false)
    })

    t.test('an expired key reads as expired', async (t) => {
      const res = await call('POST', `/accounts/${accountId}/keys`, { name: 'short', expires_at: '2030-01-02T00:00:00Z' })
      isOk(t, res, 201)
      t.equal(res.json.status, 'active')
      clock.advance(2 * 24 * 3600 * 1000)
      t.equal((await call('GET', `/keys/${res.json.id}`)).json.status, 'expired')
      isError(t, await call('PATCH', `/keys/${res.json.id}`, { expires_at: '2030-01-02T00:00:00Z' }), 'AUTH_API_KEY_CONFIGURATION_INVALID', 'expires_at')
    })

    // The ledger's conflict is a typed error the admin layer maps; these answers are the contract.
    t.test('credits: an idempotency key reused for another credit is refused, a retried one changes nothing', async (t) => {
      const id = (await call('POST', '/accounts', { name: 'credited' })).json.id as string
      const first = await call('POST', `/accounts/${id}/credits`, { amount: '5.00', idempotency_key: 'credit-1' })
      isOk(t, first)
      t.equal(first.json.balance, '5.00')
      const retried = await call('POST', `/accounts/${id}/credits`, { amount: '5.00', idempotency_key: 'credit-1' })
      isOk(t, retried)
      t.equal(retried.json.balance, '5.00', 'the retried credit is not added twice')
      for (const other of [{ amount: '6.00' }, { amount: '5.00', kind: 'grant' }]) {
        const refused = await call('POST', `/accounts/${id}/credits`, { ...other, idempotency_key: 'credit-1' })
        isError(t, refused, 'REQUEST_INVALID', 'idempotency_key')
        t.equal(refused.json.error.message, 'The request is invalid. This idempotency key was used for a different credit.')
      }
      t.equal((await call('GET', `/accounts/${id}/wallet`)).json.balance, '5.00', 'refused credits changed nothing')
    })

    t.test('request log: a cursor this API did not return is refused in the chat envelope', async (t) => {
      isOk(t, await call('GET', '/requests?limit=5'))
      for (const before of ['not-a-cursor!', Buffer.from('garbage').toString('base64url'), '']) {
        const refused = await call('GET', `/requests?before=${encodeURIComponent(before)}`)
        isError(t, refused, 'REQUEST_INVALID', 'before')
        t.equal(refused.json.error.message, 'The request is invalid. before is not a cursor this API returned.', JSON.stringify(before))
      }
    })
  })
}

t.test('later slices add routes behind the same token, parser and envelope', async (t) => {
  const backend = sqliteTestBackend()
  const clock = new ManualClock()
  const store = await backend.open({ clock })
  const logs: string[] = []
  const app = await adminApp(store, clock, {
    extraRoutes: (app, ctx) => {
      app.get<{ Params: { id: string } }>('/accounts/:id/extension', async (req) => ({ account_id: req.params.id, balance: '0.00', models: ctx.config.models.length }))
      app.post('/explode', async () => { throw new Error('kaboom') })
    },
  }, logs)
  t.teardown(async () => {
    await app.close()
    await backend.cleanup()
  })
  const call = caller(app)
  const wallet = await call('GET', '/accounts/acct_x/extension')
  isOk(t, wallet)
  t.same(wallet.json, { account_id: 'acct_x', balance: '0.00', models: config.models.length })
  isError(t, await call('GET', '/accounts/acct_x/extension', undefined, { authorization: '' }), 'AUTH_REQUIRED')
  isError(t, await call('POST', '/explode', 'x', { 'content-type': 'text/plain' }), 'REQUEST_MEDIA_TYPE_UNSUPPORTED')
  const boom = await call('POST', '/explode', {})
  t.equal(boom.status, 500)
  t.equal(boom.json.error.code, 'GATEWAY_INTERNAL_ERROR')
  t.notOk(boom.body.includes('kaboom'), 'internal details stay in the log')
  t.ok(logs.some((l) => l.includes('kaboom')), 'the internal error is logged')

  // A full key lifecycle with trace logging on: no token and no key ever reaches the log.
  const account = await call('POST', '/accounts', { name: 'logged' })
  const key = await call('POST', `/accounts/${account.json.id}/keys`, { name: 'k' })
  await call('GET', `/keys/${key.json.id}/reveal`)
  await call('POST', `/accounts/${account.json.id}/keys/import-legacy`, { key: LEGACY, name: 'old' })
  await call('GET', '/accounts', undefined, { authorization: `Bearer ${TOKEN}-wrong` })
  const text = logs.join('')
  t.ok(text.length > 0, 'something was logged')
  t.notOk(text.includes(TOKEN), 'no admin token in the log')
  t.notOk(text.includes(key.json.key), 'no plaintext key in the log')
  t.notOk(text.includes(LEGACY), 'no legacy key in the log')
})

t.test('registration refuses an empty or unsendable token', async (t) => {
  const backend = sqliteTestBackend()
  const store = await backend.open()
  t.teardown(() => backend.cleanup())
  for (const token of ['', 'two words']) {
    const app = Fastify({ logger: false })
    await t.rejects(
      async () => { await app.register(adminRoutes, { prefix: ADMIN_PREFIX, store, config, token }).ready() },
      /token must be a non-empty string without whitespace/
    )
  }
})

t.test('beside the gateway: each answers its own paths and unknown ones in its own envelope', async (t) => {
  const backend = sqliteTestBackend()
  const store = await backend.open()
  const app = Fastify({ logger: false, genReqId: newRequestId })
  const gatewayDir = mkdtempSync(join(tmpdir(), 'gw-mounted-'))
  await app.register(modelGateway, { config, env: { dataDir: gatewayDir, secret: TEST_SECRET } })
  await app.register(adminRoutes, { prefix: ADMIN_PREFIX, store, config, token: TOKEN })
  t.teardown(async () => {
    await app.close()
    await backend.cleanup()
    rmSync(gatewayDir, { recursive: true, force: true })
  })
  const call = caller(app)
  isOk(t, await call('GET', '/models'))
  isError(t, await call('GET', '/nope'), 'REQUEST_ROUTE_NOT_FOUND')
  const chat = await app.inject({ method: 'GET', url: '/v1/nothing' })
  t.equal(chat.statusCode, 404)
  t.equal(chat.json().error.code, 'REQUEST_ROUTE_NOT_FOUND', 'no admin token asked outside the admin prefix')
  const genai = await app.inject({ method: 'GET', url: '/genai/v1beta/nothing' })
  t.equal(genai.json().error.status, 'REQUEST_ROUTE_NOT_FOUND', 'gateway 404s keep their own envelope')
})
