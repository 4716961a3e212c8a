// What each official SDK makes of our authentication and billing refusals: its own error class,
// with our canonical code, reference and retry advice reachable on it. Each SDK is used as a
// client would use it, unchanged but for its base URL (the genai SDK sends its key in
// `x-goog-api-key`, which the default gateway.yaml accepts), with its default retry settings:
// a refusal that is not retryable must reach the gateway exactly once.
import { Anthropic } from '@anthropic-ai/sdk'
import { ApiError, GoogleGenAI } from '@google/genai'
import { OpenAI } from 'openai'
import t from 'tap'
import { outcomeObserver, type Outcome } from '../plugins/apps/gateway/index.js'
import { startTestGateway } from './helpers/gateway.js'
import { writeTestConfig } from './helpers/test-config.js'

const outcomes: Outcome[] = []
const gw = await startTestGateway({ server: { plugins: (d) => [...d, outcomeObserver((_ctx, outcome) => { outcomes.push(outcome) })] } })
t.teardown(() => gw.close())
t.beforeEach(() => {
  gw.mock.reset()
  outcomes.length = 0
})

const { store } = gw.services
/** A well-formed key no account holds. */
const UNKNOWN_KEY = 'sk-' + 'A'.repeat(49)

/** A key of a new account; `credit` in nano-units (0: an empty wallet, never topped up). */
async function newKey (credit: bigint): Promise<{ key: string, keyId: string, accountId: string }> {
  const account = await store.accounts.create({ name: 'sdk errors' })
  if (credit > 0n) {
    await store.ledger.credit({ accountId: account.id, amount: credit, kind: 'topup', postingId: `seed:${account.id}` })
    await store.accounts.markToppedUp(account.id)
  }
  const created = await store.keys.create({ accountId: account.id, name: 'sdk' })
  if (!created.ok) throw new Error(created.error)
  return { key: created.value.plaintext, keyId: created.value.record.id, accountId: account.id }
}

const funded = await newKey(10_000_000_000n)
const empty = await newKey(0n)
const revoked = await newKey(10_000_000_000n)
await store.keys.revoke(revoked.keyId)

/** The refusals the gateway recorded since the test began: one per request that reached it. */
function refusals (): string[] {
  return outcomes.filter((o) => o.kind === 'refused').map((o) => o.errorCode ?? '')
}

async function failure (p: Promise<unknown>): Promise<unknown> {
  return await p.then(() => null, (e: unknown) => e)
}

t.test('openai', async (t) => {
  const client = (apiKey: string): OpenAI => new OpenAI({ baseURL: `${gw.url}/v1`, apiKey })
  const chat = (apiKey: string): Promise<unknown> =>
    failure(client(apiKey).chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }))

  t.test('an unknown key: AuthenticationError (401) with our code', async (t) => {
    const err = await chat(UNKNOWN_KEY)
    t.ok(err instanceof OpenAI.AuthenticationError, 'AuthenticationError')
    if (!(err instanceof OpenAI.APIError)) return
    t.equal(err.status, 401)
    t.equal(err.code, 'AUTH_INVALID_API_KEY')
    t.equal(err.type, 'authentication_error')
    t.equal(err.param, null)
    t.match(err.error, { reference: 'GW-AUTH-1003', retry: { retryable: false, strategy: 'NONE' }, billing: { status: 'NOT_BILLED' } })
    t.equal(err.requestID, err.headers?.get('x-request-id'), 'the SDK reads our X-Request-ID')
    t.same(refusals(), ['AUTH_INVALID_API_KEY'], 'not retried')
  })

  t.test('a revoked key: AuthenticationError with AUTH_INVALID_API_KEY', async (t) => {
    const err = await chat(revoked.key)
    t.ok(err instanceof OpenAI.AuthenticationError, 'AuthenticationError')
    if (err instanceof OpenAI.APIError) t.equal(err.code, 'AUTH_INVALID_API_KEY')
  })

  t.test('an empty wallet: APIError 402, our code and TOP_UP advice', async (t) => {
    const err = await chat(empty.key)
    t.ok(err instanceof OpenAI.APIError, 'APIError')
    if (!(err instanceof OpenAI.APIError)) return
    t.equal(err.constructor, OpenAI.APIError, 'the SDK has no class of its own for 402: the plain APIError')
    t.equal(err.status, 402)
    t.equal(err.code, 'BILLING_INSUFFICIENT_CREDITS')
    t.equal(err.type, 'insufficient_quota')
    t.match(err.error, { reference: 'GW-BILLING-5001', retry: { retryable: false, strategy: 'TOP_UP' }, billing: { status: 'NOT_BILLED' } })
    t.same(refusals(), ['BILLING_INSUFFICIENT_CREDITS'], 'not retried')
    t.equal(gw.mock.calls.length, 0, 'nothing was sent upstream')
  })

  t.test('the funded key is served', async (t) => {
    const res = await client(funded.key).chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] })
    t.type(res.choices[0]?.message.content, 'string')
  })
})

t.test('anthropic', async (t) => {
  const create = (apiKey: string): Promise<unknown> =>
    failure(new Anthropic({ baseURL: gw.url, apiKey }).messages.create({ model: 'anthropic/claude-haiku-3.5', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] }))

  t.test('an unknown key: AuthenticationError (401), our envelope in .error', async (t) => {
    const err = await create(UNKNOWN_KEY)
    t.ok(err instanceof Anthropic.AuthenticationError, 'AuthenticationError')
    if (!(err instanceof Anthropic.APIError)) return
    t.equal(err.status, 401)
    t.match(err.error, { type: 'error', error: { type: 'authentication_error', code: 'AUTH_INVALID_API_KEY', reference: 'GW-AUTH-1003' } })
    t.same(refusals(), ['AUTH_INVALID_API_KEY'], 'not retried')
  })

  t.test('a revoked key: AuthenticationError with AUTH_INVALID_API_KEY', async (t) => {
    const err = await create(revoked.key)
    t.ok(err instanceof Anthropic.AuthenticationError, 'AuthenticationError')
    if (err instanceof Anthropic.APIError) t.match(err.error, { error: { code: 'AUTH_INVALID_API_KEY' } })
  })

  t.test('an empty wallet: APIError 402 whose .error.error.type is billing_error', async (t) => {
    const err = await create(empty.key)
    t.ok(err instanceof Anthropic.PaymentRequiredError && err instanceof Anthropic.APIError, 'PaymentRequiredError, an APIError')
    if (!(err instanceof Anthropic.APIError)) return
    t.equal(err.status, 402)
    const body = err.error as { error?: { type?: unknown } } | undefined
    t.equal(body?.error?.type, 'billing_error', '.error.error.type')
    t.match(err.error, { type: 'error', error: { code: 'BILLING_INSUFFICIENT_CREDITS', reference: 'GW-BILLING-5001', retry: { retryable: false, strategy: 'TOP_UP' } } })
    t.same(refusals(), ['BILLING_INSUFFICIENT_CREDITS'], 'not retried')
    t.equal(gw.mock.calls.length, 0, 'nothing was sent upstream')
  })

  t.test('the funded key is served', async (t) => {
    const res = await new Anthropic({ baseURL: gw.url, apiKey: funded.key }).messages.create({ model: 'anthropic/claude-haiku-3.5', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] })
    t.equal(res.type, 'message')
  })
})

t.test('genai (key in x-goog-api-key, the SDK unchanged but for its base URL)', async (t) => {
  const generate = (apiKey: string): Promise<unknown> =>
    failure(new GoogleGenAI({ apiKey, httpOptions: { baseUrl: `${gw.url}/genai` } }).models.generateContent({ model: 'genai/gemini-2.5-flash', contents: 'hi' }))

  t.test('the funded key is served: the SDK\'s own key header is read', async (t) => {
    const res = await new GoogleGenAI({ apiKey: funded.key, httpOptions: { baseUrl: `${gw.url}/genai` } }).models.generateContent({ model: 'genai/gemini-2.5-flash', contents: 'hi' })
    t.type(res.text, 'string')
    const sent = gw.mock.calls[0]
    t.ok(sent, 'the request went upstream')
    t.notOk(JSON.stringify(sent?.headers ?? {}).includes(funded.key), 'our key is not passed to the provider')
  })

  t.test('an unknown key: ApiError with status 401 and our code', async (t) => {
    const err = await generate(UNKNOWN_KEY)
    t.ok(err instanceof ApiError, 'ApiError')
    if (!(err instanceof ApiError)) return
    t.equal(err.status, 401)
    t.match(err.message, /AUTH_INVALID_API_KEY/, 'the key was read (not AUTH_API_KEY_REQUIRED)')
    t.match(err.message, /GW-AUTH-1003/)
    t.same(refusals(), ['AUTH_INVALID_API_KEY'], 'not retried')
  })

  t.test('without x-goog-api-key among the key headers, the unchanged SDK\'s key is not seen', async (t) => {
    const config = writeTestConfig((c) => {
      const auth = c.auth as { headers: Array<{ name: string }> }
      auth.headers = auth.headers.filter((h) => h.name !== 'x-goog-api-key')
    })
    const narrow = await startTestGateway({ configFile: config.file, mock: gw.mock, shareStoreWith: gw })
    t.teardown(async () => { await narrow.close(); config.remove() })
    const err = await failure(new GoogleGenAI({ apiKey: funded.key, httpOptions: { baseUrl: `${narrow.url}/genai` } }).models.generateContent({ model: 'genai/gemini-2.5-flash', contents: 'hi' }))
    t.ok(err instanceof ApiError && err.status === 401 && err.message.includes('AUTH_API_KEY_REQUIRED'), 'ApiError 401 AUTH_API_KEY_REQUIRED')
  })

  t.test('a revoked key: ApiError 401', async (t) => {
    const err = await generate(revoked.key)
    t.ok(err instanceof ApiError && err.status === 401 && err.message.includes('AUTH_INVALID_API_KEY'), 'ApiError 401 AUTH_INVALID_API_KEY')
  })

  t.test('an empty wallet: ApiError 402 with our code and TOP_UP advice', async (t) => {
    const err = await generate(empty.key)
    t.ok(err instanceof ApiError, 'ApiError')
    if (!(err instanceof ApiError)) return
    t.equal(err.status, 402)
    t.match(err.message, /BILLING_INSUFFICIENT_CREDITS/)
    t.match(err.message, /TOP_UP/)
    t.same(refusals(), ['BILLING_INSUFFICIENT_CREDITS'], 'not retried')
    t.equal(gw.mock.calls.length, 0, 'nothing was sent upstream')
  })
})
