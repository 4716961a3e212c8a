// Admin input out of range answers a 400 naming the field, never a 500: the route schemas
// (Fastify, before any handler) and the money bounds of a credit, on both stores.
import Fastify, { type FastifyInstance } from 'fastify'
import t, { type Test as Tap } from 'tap'
import { ADMIN_PREFIX, adminRoutes } from '../../plugins/apps/admin/index.js'
import { MAX_BALANCE, MAX_CREDIT_UNITS } from '../../plugins/concerns/accounts/service.js'
import { loadConfig } from '../../plugins/apps/gateway/config.js'
import { newRequestId } from '../../plugins/apps/gateway/index.js'
import { formatMoney } from '../../plugins/foundation/pricing/money.js'
import { testBackends } from '../helpers/store.js'
import { repoPath } from '../helpers/paths.js'

const { config } = loadConfig(repoPath('gateway.yaml'), {})
const TOKEN = 'admin-token-for-tests-0123456789'

for (const backend of testBackends()) {
  t.test(`admin input bounds (${backend.name})`, async (t) => {
    const store = await backend.open()
    const app: FastifyInstance = Fastify({ genReqId: newRequestId, logger: false })
    await app.register(adminRoutes, { prefix: ADMIN_PREFIX, store, config, token: TOKEN })
    t.teardown(async () => { await app.close(); await backend.cleanup() })
    const call = async (method: 'GET' | 'POST' | 'PATCH', path: string, body?: unknown) => {
      const res = await app.inject({
        method,
        url: `${ADMIN_PREFIX}${path}`,
        headers: { authorization: `Bearer ${TOKEN}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(body === undefined ? {} : { payload: JSON.stringify(body) })
      })
      return { status: res.statusCode, json: res.json() as Record<string, any> }
    }
    const refused = (t: Tap, res: { status: number, json: Record<string, any> }, param: string, code = 'REQUEST_INVALID'): void => {
      t.equal(res.status, 400, `400 for ${param}: ${JSON.stringify(res.json)}`)
      t.equal(res.json.error?.code, code, `code ${code}`)
      t.equal(res.json.error?.param, param, `param names ${param}`)
    }
    const account = await call('POST', '/accounts', { name: 'bounds' })
    t.equal(account.status, 201)
    const id = account.json.id as string

    t.test('a credit above 1,000,000,000 is a 400 naming amount, not a 500', async (t) => {
      t.equal(MAX_CREDIT_UNITS, 1_000_000_000)
      for (const amount of ['1000000000.000000001', '1000000001', '5000000000', '9223372037', '99999999999999', '1e12']) {
        refused(t, await call('POST', `/accounts/${id}/credits`, { amount }), 'amount')
      }
      t.equal((await call('GET', `/accounts/${id}/wallet`)).json.balance, '0.00', 'nothing was credited')
      const max = await call('POST', `/accounts/${id}/credits`, { amount: '1000000000' })
      t.equal(max.status, 200, 'exactly the bound is accepted')
      t.equal(max.json.balance, '1000000000.00')
    })

    t.test('a credit that would take the balance past the bound is a 400 naming amount', async (t) => {
      const other = (await call('POST', '/accounts', { name: 'rich' })).json.id as string
      for (let i = 0; i < 5; i++) t.equal((await call('POST', `/accounts/${other}/credits`, { amount: '1000000000', kind: 'grant' })).status, 200)
      t.equal((await call('GET', `/accounts/${other}/wallet`)).json.balance, formatMoney(MAX_BALANCE), 'the balance reached the bound')
      refused(t, await call('POST', `/accounts/${other}/credits`, { amount: '0.000000001' }), 'amount')
      t.equal((await call('GET', `/accounts/${other}/wallet`)).json.balance, formatMoney(MAX_BALANCE), 'and stayed there')
    })

    t.test('bodies of the wrong shape are refused by the route schema with the field named', async (t) => {
      refused(t, await call('POST', `/accounts/${id}/credits`, { amount: 25 }), 'amount')
      refused(t, await call('POST', `/accounts/${id}/credits`, {}), 'amount')
      refused(t, await call('POST', `/accounts/${id}/credits`, { amount: '1.00', kind: 'gift' }), 'kind')
      refused(t, await call('POST', `/accounts/${id}/credits`, { amount: '1.00', extra: 1 }), 'extra')
      refused(t, await call('POST', `/accounts/${id}/credits`, { amount: '1.00', note: 'x'.repeat(501) }), 'note')
      refused(t, await call('POST', `/accounts/${id}/credits`, [1, 2]), 'body')
      refused(t, await call('POST', '/accounts', { name: 42 }), 'name')
      refused(t, await call('POST', '/accounts', { tier: 'free' }), 'name')
      refused(t, await call('PATCH', `/accounts/${id}`, { status: 'gone' }), 'status')
      refused(t, await call('GET', '/accounts?limit=abc'), 'limit')
      refused(t, await call('GET', '/accounts?limit=5000'), 'limit')
      refused(t, await call('GET', '/requests?sort=asc'), 'sort')
      const key = '/accounts/' + id + '/keys'
      refused(t, await call('POST', key, { name: 'k', daily_image_cap: 2 ** 31 }), 'daily_image_cap', 'AUTH_API_KEY_CONFIGURATION_INVALID')
      refused(t, await call('POST', key, { name: 'k', quota: 5 }), 'quota', 'AUTH_API_KEY_CONFIGURATION_INVALID')
      refused(t, await call('POST', key, { name: 'k', quota: '99999999999999999999' }), 'quota', 'AUTH_API_KEY_CONFIGURATION_INVALID')
      refused(t, await call('POST', key, { name: 'k', tags: Array.from({ length: 21 }, (_, i) => `t${i}`) }), 'tags', 'AUTH_API_KEY_CONFIGURATION_INVALID')
      refused(t, await call('POST', key, { name: 'k', allowed_model: ['x'] }), 'allowed_model', 'AUTH_API_KEY_CONFIGURATION_INVALID')
    })
  })
}
