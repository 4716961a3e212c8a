// A client that lost the answer to its request can recover it instead of paying twice: a retry
// under the same X-Idempotency-Key is refused (409 REQUEST_IDEMPOTENCY_REPLAY_UNAVAILABLE) naming
// the original request, which the admin request log finds by its key; for a video create the
// refusal names the job, which the client then polls (its own account only). Through the
// official SDKs, on both stores.
import Anthropic from '@anthropic-ai/sdk'
import { GoogleGenAI } from '@google/genai'
import OpenAI from 'openai'
import t from 'tap'
import { adminClient, ledgerState, priceOf } from './helpers/billing.js'
import { startTestGateway, type Backend, type TestGateway } from './helpers/gateway.js'

const ADMIN_TOKEN = 'admin-token-idempotency-recovery-0123456789'
const SORA = priceOf('openai/sora-2').unitPrice ?? 0n

interface RequestRow { request_id: string, idempotency_key: string | null, status: number, error_code: string | null, outcome: string }

async function otherAccountKey (gw: TestGateway): Promise<string> {
  const account = await gw.services.store.accounts.create({ name: 'someone else' })
  const key = await gw.services.store.keys.create({ accountId: account.id, name: 'their key' })
  if (!key.ok) throw new Error(key.error)
  await gw.services.store.ledger.credit({ accountId: account.id, amount: 10_000_000_000n, kind: 'topup', postingId: `seed:${account.id}` })
  return key.value.plaintext
}

/** The admin listing of the requests sent with this key, once the log has both rows. */
async function rowsOfKey (gw: TestGateway, key: string, count: number): Promise<RequestRow[]> {
  const admin = adminClient(gw, ADMIN_TOKEN)
  for (let i = 0; i < 100; i++) {
    const page = await admin<{ data: RequestRow[] }>('GET', `/requests?idempotency_key=${encodeURIComponent(key)}`)
    if (page.json.data.length >= count) return page.json.data
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  throw new Error(`the request log never showed ${count} rows for ${key}`)
}

for (const backend of ['sqlite', 'pg'] as Backend[]) {
  t.test(`a lost answer is recoverable (${backend})`, async (t) => {
    const gw = await startTestGateway({ backend, server: { adminToken: ADMIN_TOKEN } })
    t.teardown(() => gw.close())
    const openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: gw.key, maxRetries: 0 })

    t.test('chat: the retry\'s 409 names the first request, which the admin request log finds by the key', async (t) => {
      const key = `chat-${backend}-${Date.now()}`
      const body = { model: 'openai/gpt-4o-mini', messages: [{ role: 'user' as const, content: 'answer once' }] }
      const first = await openai.chat.completions.create(body, { headers: { 'x-idempotency-key': key } }).withResponse()
      const firstId = first.response.headers.get('x-request-id') ?? ''
      t.ok(firstId !== '', `the first request ran (${firstId})`)
      const err = await openai.chat.completions.create(body, { headers: { 'x-idempotency-key': key } }).then(() => null, (e: unknown) => e)
      t.ok(err instanceof OpenAI.APIError, 'the SDK raises an APIError')
      const e = err as InstanceType<typeof OpenAI.APIError>
      t.equal(e.status, 409)
      const detail = e.error as { code?: string, original_request_id?: string, job_id?: string, message?: string }
      t.equal(detail.code, 'REQUEST_IDEMPOTENCY_REPLAY_UNAVAILABLE')
      t.equal(detail.original_request_id, firstId, 'the envelope names the original request id')
      t.equal(detail.job_id, undefined, 'no job for a chat request')
      t.match(detail.message, firstId, 'and so does the message')
      const rows = await rowsOfKey(gw, key, 2)
      t.same(rows.map((r) => [r.request_id === firstId ? 'first' : 'retry', r.status, r.error_code]).sort(),
        [['first', 200, null], ['retry', 409, 'REQUEST_IDEMPOTENCY_REPLAY_UNAVAILABLE']], 'the listing by key: the original and its refused retry')
      t.ok(rows.every((r) => r.idempotency_key === key), 'each row shows the key')
    })

    t.test('messages and genai envelopes carry the original request id too', async (t) => {
      const anthropic = new Anthropic({ baseURL: gw.url, apiKey: gw.key, maxRetries: 0 })
      const key = `msg-${backend}-${Date.now()}`
      const body = { model: 'anthropic/claude-haiku-3.5', max_tokens: 16, messages: [{ role: 'user' as const, content: 'once' }] }
      const first = await anthropic.messages.create(body, { headers: { 'x-idempotency-key': key } }).withResponse()
      const err = await anthropic.messages.create(body, { headers: { 'x-idempotency-key': key } }).then(() => null, (e: unknown) => e) as InstanceType<typeof Anthropic.APIError>
      t.equal(err?.status, 409)
      const envelope = err.error as { error?: { code?: string, original_request_id?: string } }
      t.equal(envelope.error?.original_request_id, first.response.headers.get('x-request-id'), 'messages envelope: error.original_request_id')

      const gkey = `genai-${backend}-${Date.now()}`
      const genai = new GoogleGenAI({ apiKey: gw.key, httpOptions: { baseUrl: `${gw.url}/genai`, retryOptions: { attempts: 1 }, headers: { 'x-idempotency-key': gkey } } })
      await genai.models.generateContent({ model: 'genai/gemini-2.5-flash', contents: 'once' })
      const firstRow = (await rowsOfKey(gw, gkey, 1))[0]
      const raw = await fetch(`${gw.url}/genai/v1beta/models/genai/gemini-2.5-flash:generateContent`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-goog-api-key': gw.key, 'x-idempotency-key': gkey },
        body: JSON.stringify({ contents: [{ parts: [{ text: 'once' }], role: 'user' }] })
      })
      const gerr = await raw.json() as { error: { status: string, details: Array<{ metadata?: Record<string, string> }> } }
      t.equal(raw.status, 409)
      t.equal(gerr.error.status, 'REQUEST_IDEMPOTENCY_REPLAY_UNAVAILABLE')
      t.equal(gerr.error.details[0]?.metadata?.original_request_id, firstRow?.request_id, 'genai envelope: the error-info metadata names it')
    })

    t.test('a video create: the retry\'s 409 names the job, which its account polls and another cannot see', async (t) => {
      const key = `video-${backend}-${Date.now()}`
      const start = await ledgerState(gw)
      const created = await openai.videos.create({ model: 'openai/sora-2', prompt: 'a paper boat on a river', seconds: '4' }, { headers: { 'x-idempotency-key': key } })
      t.match(created.id, /^job_[0-9A-Za-z]{22}$/)
      // The client lost that answer and retries with the same key.
      const err = await openai.videos.create({ model: 'openai/sora-2', prompt: 'a paper boat on a river', seconds: '4' }, { headers: { 'x-idempotency-key': key } })
        .then(() => null, (e: unknown) => e) as InstanceType<typeof OpenAI.APIError>
      t.equal(err?.status, 409)
      const detail = err.error as { code?: string, job_id?: string, original_request_id?: string, message?: string }
      t.equal(detail.code, 'REQUEST_IDEMPOTENCY_REPLAY_UNAVAILABLE')
      t.equal(detail.job_id, created.id, 'the refusal names the job the first create made')
      t.match(detail.message, created.id)
      t.equal(gw.mock.calls.filter((c) => c.method === 'POST' && c.path === '/v1/videos').length, 1, 'the provider was asked for one video')
      const polled = await openai.videos.retrieve(detail.job_id ?? '')
      t.equal(polled.id, created.id, 'the job named by the refusal polls for its account')
      const stranger = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: await otherAccountKey(gw), maxRetries: 0 })
      const notFound = await stranger.videos.retrieve(detail.job_id ?? '').then(() => null, (e: unknown) => e) as InstanceType<typeof OpenAI.APIError>
      t.equal(notFound?.status, 404, 'another account: not found')
      const rows = await rowsOfKey(gw, key, 2)
      t.ok(rows.some((r) => r.request_id === detail.original_request_id && r.status === 200), 'the original request is in the log under the key')
      const end = await ledgerState(gw)
      t.equal(end.openHolds - start.openHolds, 1, 'one job holds its price: the retry held nothing')
      t.ok(SORA > 0n)
    })
  })
}
