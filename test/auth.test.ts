import t from 'tap'
import { Writable } from 'node:stream'
import { randomUUID } from 'node:crypto'
import { Client, request } from 'undici'
import { ManualClock } from './helpers/store.js'
import { startTestGateway, type Backend, type TestGateway } from './helpers/gateway.js'

const CHAT = '/v1/chat/completions'
const body = JSON.stringify({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] })

/** Sends headers as given: a name listed twice goes out as two header lines. */
async function call (gw: TestGateway, headers: Record<string, string> | Array<[string, string]>, path = CHAT, payload: string = body, contentType = 'application/json') {
  const pairs = Array.isArray(headers) ? headers : Object.entries(headers)
  const flat = [...pairs.flat(), 'content-type', contentType]
  const res = await request(gw.url + path, { method: 'POST', headers: flat, body: payload })
  const text = await res.body.text()
  const code = res.headers['x-gateway-error-code']
  return { status: res.statusCode, code: typeof code === 'string' ? code : null, text }
}

for (const backend of ['sqlite', 'pg'] as Backend[]) {
  t.test(`authentication on ${backend}`, async (t) => {
    const clock = new ManualClock('2030-01-01T00:00:00.000Z')
    const lines: string[] = []
    const logStream = new Writable({ write (chunk, _enc, cb) { lines.push(String(chunk)); cb() } })
    const gw = await startTestGateway({ backend, services: { clock }, server: { logger: { level: 'debug', stream: logStream } } })
    t.teardown(() => gw.close())
    const { store } = gw.services
    const newKey = async (fields: Record<string, unknown> = {}, accountId = gw.account.id) => {
      const created = await store.keys.create({ accountId, name: 'k', ...fields })
      if (!created.ok) throw new Error(created.error)
      return created.value
    }

    t.test('a valid key in each of the three headers is accepted', async (t) => {
      for (const name of ['authorization', 'x-api-key', 'x-genai-api-key']) {
        const r = await call(gw, [[name, name === 'authorization' ? `Bearer ${gw.key}` : gw.key]])
        t.equal(r.status, 200, name)
      }
    })

    t.test('header matrix: missing, ambiguous, repeated, malformed', async (t) => {
      const other = (await newKey()).plaintext
      const cases: Array<[string, Array<[string, string]>, number, string | null]> = [
        ['no key header', [], 401, 'AUTH_API_KEY_REQUIRED'],
        ['empty x-api-key', [['x-api-key', '']], 401, 'AUTH_API_KEY_REQUIRED'],
        ['Bearer without token', [['authorization', 'Bearer ']], 401, 'AUTH_API_KEY_REQUIRED'],
        ['same key in two headers', [['authorization', `Bearer ${gw.key}`], ['x-api-key', gw.key]], 200, null],
        ['same key in all three', [['authorization', `Bearer ${gw.key}`], ['x-api-key', gw.key], ['x-genai-api-key', gw.key]], 200, null],
        ['different keys in two headers', [['authorization', `Bearer ${gw.key}`], ['x-api-key', other]], 400, 'AUTH_AMBIGUOUS_API_KEY'],
        ['different keys genai + messages', [['x-genai-api-key', other], ['x-api-key', gw.key]], 400, 'AUTH_AMBIGUOUS_API_KEY'],
        ['x-api-key repeated, same value', [['x-api-key', gw.key], ['x-api-key', gw.key]], 200, null],
        ['x-api-key repeated, different values', [['x-api-key', gw.key], ['x-api-key', other]], 400, 'AUTH_AMBIGUOUS_API_KEY'],
        ['lower-case scheme', [['authorization', `bearer ${gw.key}`]], 200, null],
        ['padded value', [['x-api-key', `  ${gw.key}  `]], 200, null],
        ['Basic scheme alone', [['authorization', 'Basic dXNlcjpwYXNz']], 401, 'AUTH_INVALID_API_KEY'],
        ['bare key in Authorization', [['authorization', gw.key]], 401, 'AUTH_INVALID_API_KEY'],
        ['Basic scheme next to a valid x-api-key', [['authorization', 'Basic dXNlcjpwYXNz'], ['x-api-key', gw.key]], 200, null],
        ['unknown well-formed key', [['x-api-key', 'sk-' + 'A'.repeat(49)]], 401, 'AUTH_INVALID_API_KEY'],
        ['one character changed (checksum)', [['x-api-key', gw.key.slice(0, -1) + (gw.key.endsWith('A') ? 'B' : 'A')]], 401, 'AUTH_INVALID_API_KEY'],
        ['not a key at all', [['x-api-key', 'hello']], 401, 'AUTH_INVALID_API_KEY'],
        ['unknown legacy key', [['x-api-key', 'gw_live_0123456789abcdef0123']], 401, 'AUTH_INVALID_API_KEY']
      ]
      for (const [name, headers, status, code] of cases) {
        const r = await call(gw, headers)
        t.equal(r.status, status, `${name}: status`)
        t.equal(r.code, code, `${name}: code`)
      }
    })

    t.test('the error envelope follows the family of the path', async (t) => {
      const m = await call(gw, [], '/v1/messages', JSON.stringify({ model: 'anthropic/claude-sonnet-4', max_tokens: 5, messages: [] }))
      t.equal(JSON.parse(m.text).type, 'error')
      t.equal(JSON.parse(m.text).error.type, 'authentication_error')
      const g = await call(gw, [], '/genai/v1beta/models/genai%2Fgemini-2.5-flash:generateContent', '{}')
      t.equal(JSON.parse(g.text).error.status, 'AUTH_API_KEY_REQUIRED')
      t.equal(JSON.parse(g.text).error.code, 401)
    })

    t.test('revoked → AUTH_INVALID_API_KEY on its next request', async (t) => {
      const k = await newKey()
      t.equal((await call(gw, { 'x-api-key': k.plaintext })).status, 200)
      await store.keys.revoke(k.record.id)
      const r = await call(gw, { 'x-api-key': k.plaintext })
      t.equal(r.code, 'AUTH_INVALID_API_KEY')
      t.equal(r.status, 401)
    })

    t.test('one connection: its key hashed once, and every request judged by its own key', async (t) => {
      // One keep-alive connection, as an SDK's pool or a proxy in front of the gateway uses it.
      const conn = new Client(gw.url, { pipelining: 1 })
      t.teardown(() => conn.close())
      const onConn = async (key: string, client = conn) => {
        const res = await client.request({ path: CHAT, method: 'POST', headers: { 'x-api-key': key, 'content-type': 'application/json' }, body })
        await res.body.text()
        const code = res.headers['x-gateway-error-code']
        return { status: res.statusCode, code: typeof code === 'string' ? code : null }
      }
      const hashKey = store.hashKey
      let hashed = 0
      store.hashKey = (plaintext) => { hashed++; return hashKey(plaintext) }
      t.teardown(() => { store.hashKey = hashKey })

      for (let i = 0; i < 5; i++) t.equal((await onConn(gw.key)).status, 200, `request ${i + 1} on the connection`)
      t.equal(hashed, 1, 'five requests with one key on one connection: one HMAC')
      for (let i = 0; i < 3; i++) {
        const fresh = new Client(gw.url)
        t.equal((await onConn(gw.key, fresh)).status, 200, `request on new connection ${i + 1}`)
        await fresh.close()
      }
      t.equal(hashed, 4, 'each new connection hashes its key once')

      // Another key on the same connection is its own key: here one allowed no model this route serves.
      const narrow = (await newKey({ allowedModels: ['anthropic/claude-sonnet-4'] })).plaintext
      t.same(await onConn(narrow), { status: 403, code: 'MODEL_ACCESS_DENIED' }, 'a second key on the connection is judged by its own record')
      t.equal((await onConn(gw.key)).status, 200, 'and the first key again by its own')
      // The same length as the connection's key, one character off: its checksum refuses it.
      const typo = gw.key.slice(0, -1) + (gw.key.endsWith('A') ? 'B' : 'A')
      t.same(await onConn(typo), { status: 401, code: 'AUTH_INVALID_API_KEY' }, 'a key one character off the remembered one is refused')
      const revoked = await newKey()
      t.equal((await onConn(revoked.plaintext)).status, 200, 'a key before its revocation')
      await store.keys.revoke(revoked.record.id)
      t.same(await onConn(revoked.plaintext), { status: 401, code: 'AUTH_INVALID_API_KEY' }, 'the same key on the same connection after its revocation')
    })

    t.test('inactive → AUTH_API_KEY_INACTIVE, and active again after an update', async (t) => {
      const k = await newKey({ active: false })
      t.equal((await call(gw, { 'x-api-key': k.plaintext })).code, 'AUTH_API_KEY_INACTIVE')
      await store.keys.update(k.record.id, { active: true })
      t.equal((await call(gw, { 'x-api-key': k.plaintext })).status, 200)
    })

    t.test('expired → AUTH_API_KEY_EXPIRED, exact at the expiry instant', async (t) => {
      const expiresAt = new Date(clock.now().getTime() + 60_000)
      const k = await newKey({ expiresAt })
      clock.advance(59_999)
      t.equal((await call(gw, { 'x-api-key': k.plaintext })).status, 200, '1 ms before expiry')
      clock.advance(1)
      const r = await call(gw, { 'x-api-key': k.plaintext })
      t.equal(r.code, 'AUTH_API_KEY_EXPIRED', 'at the instant')
      t.equal(r.status, 403)
    })

    t.test('suspended account → AUTH_ACCOUNT_SUSPENDED; reactivated works again', async (t) => {
      const account = await store.accounts.create({ name: 'to suspend' })
      await store.ledger.credit({ accountId: account.id, amount: 10_000_000_000n, kind: 'topup', postingId: `seed:${account.id}` })
      const k = await newKey({}, account.id)
      t.equal((await call(gw, { 'x-api-key': k.plaintext })).status, 200)
      await store.accounts.update(account.id, { status: 'suspended' })
      const r = await call(gw, { 'x-api-key': k.plaintext })
      t.equal(r.code, 'AUTH_ACCOUNT_SUSPENDED')
      t.equal(r.status, 403)
      await store.accounts.update(account.id, { status: 'active' })
      t.equal((await call(gw, { 'x-api-key': k.plaintext })).status, 200)
    })

    t.test('allowed models: MODEL_ACCESS_DENIED before anything is forwarded, whatever names the model', async (t) => {
      const k = await newKey({ allowedModels: ['openai/gpt-4o-mini'] })
      const h = { 'x-api-key': k.plaintext }
      const before = gw.mock.calls.length
      t.equal((await call(gw, h)).status, 200, 'the allowed model works')
      const denied = [
        await call(gw, h, CHAT, JSON.stringify({ model: 'openai/gpt-4o', messages: [] })),
        await call(gw, h, '/genai/v1beta/models/genai%2Fgemini-2.5-flash:generateContent', '{}'),
        await call(gw, h, '/genai/v1beta/models/genai/gemini-2.5-flash:streamGenerateContent?alt=sse', '{}'),
        await call(gw, h, '/genai/v1beta/genai/gemini-2.5-flash:generateContent', '{}'),
        await call(gw, h, '/v1/audio/transcriptions', '--b\r\nContent-Disposition: form-data; name="model"\r\n\r\nopenai/whisper-1\r\n--b\r\nContent-Disposition: form-data; name="file"; filename="a.wav"\r\nContent-Type: audio/wav\r\n\r\nRIFF\r\n--b--\r\n', 'multipart/form-data; boundary=b')
      ]
      for (const r of denied) {
        t.equal(r.code, 'MODEL_ACCESS_DENIED')
        t.equal(r.status, 403)
      }
      t.equal(gw.mock.calls.length, before + 1, 'only the allowed request reached the upstream')
    })

    t.test('a fallback outside the allowed list is not used', async (t) => {
      const k = await newKey({ allowedModels: ['openai/gpt-4o'] })
      const r = await call(gw, { 'x-api-key': k.plaintext, 'x-mock-status': '503' }, CHAT, JSON.stringify({ model: 'openai/gpt-4o', messages: [] }))
      t.equal(r.code, 'MODEL_BUSY', 'the primary failure (an overloaded upstream) stands; gpt-4o-mini (its fallback) is not allowed')
    })

    t.test('the hot path does no database round trip once a key is cached', async (t) => {
      const k = await newKey()
      // Every instance reads the store's revision every 500 ms and drops the keys written since
      // (on PostgreSQL this instance's own writes too: one reload per change). Absorb the new key's first.
      await gw.services.keyChanges?.poll()
      const original = store.keys.findByLookupHash.bind(store.keys)
      let lookups = 0
      store.keys.findByLookupHash = async (hash: string) => { lookups++; return await original(hash) }
      t.teardown(() => { store.keys.findByLookupHash = original })
      for (let i = 0; i < 20; i++) t.equal((await call(gw, { 'x-api-key': k.plaintext })).status, 200)
      t.equal(lookups, 1, '20 requests, one lookup')
    })

    t.test('no plaintext key in any log line or error body', async (t) => {
      const k = await newKey()
      await call(gw, { 'x-api-key': k.plaintext, 'x-mock-status': '500' })
      await call(gw, [['x-api-key', k.plaintext], ['authorization', `Bearer ${gw.key}`]])
      await call(gw, { 'x-api-key': k.plaintext }, CHAT, '{bad json')
      const all = lines.join('')
      t.ok(lines.length > 0, 'the gateway logged something')
      t.notOk(all.includes(k.plaintext), 'key absent from logs')
      t.notOk(all.includes(gw.key), 'seeded key absent from logs')
      t.notOk(all.includes('upstream-openai-secret'), 'provider credential absent from logs')
    })
  })
}

t.test('revoke on one instance takes effect on another within one second (PostgreSQL + Redis)', async (t) => {
  const channel = `test-invalidation-${randomUUID()}`
  const a = await startTestGateway({ backend: 'pg', redisChannel: channel })
  const b2 = await startTestGateway({ backend: 'pg', redisChannel: channel, location: a.location, mock: a.mock, seed: false })
  t.teardown(async () => { await b2.close(); await a.close() })
  const windows: number[] = []
  for (let i = 0; i < 5; i++) {
    const created = await a.services.store.keys.create({ accountId: a.account.id, name: `k${i}` })
    if (!created.ok) throw new Error(created.error)
    const h = { 'x-api-key': created.value.plaintext }
    t.equal((await call(b2, h)).status, 200, 'instance B caches the key')
    t.equal((await call(b2, h)).status, 200)
    const revokedAt = process.hrtime.bigint()
    await a.services.store.keys.revoke(created.value.record.id)
    let refusedAt: bigint | null = null
    while (process.hrtime.bigint() - revokedAt < 1_000_000_000n) {
      const r = await call(b2, h)
      if (r.code === 'AUTH_INVALID_API_KEY') { refusedAt = process.hrtime.bigint(); break }
    }
    t.ok(refusedAt !== null, 'B refused the revoked key within 1 s')
    if (refusedAt !== null) windows.push(Number(refusedAt - revokedAt) / 1e6)
  }
  t.comment(`revoke → refused on the other instance (ms): ${windows.map((w) => w.toFixed(2)).join(', ')}`)
})
