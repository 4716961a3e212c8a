// `?alt=` of issue 25: the genai provider allow-listed `alt` (what the SDK's stream asks for:
// alt=sse), so `?alt=proto` on generateContent reached the provider, whose 200 KB protobuf answer
// no meter reads, and it was billed 5 input tokens. Now each operation declares the query values
// its answer can be metered in (genai.generateContent: alt=json; streamGenerateContent: alt=sse or
// json); any other value is refused before the hold, and nothing is forwarded. On both stores.
import t from 'tap'
import { ledgerState } from './helpers/billing.js'
import { startTestGateway, type Backend, type TestGateway } from './helpers/gateway.js'
import { PROTO_ANSWER_BYTES } from './fixtures/mock-upstream/gemini.js'
import { checkBounded } from './helpers/wallet-bound.js'

const PATH = '/genai/v1beta/models/genai%2Fgemini-2.5-flash'
const BODY = JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'hello' }] }] })

async function post (gw: TestGateway, pathAndQuery: string): Promise<Response> {
  return await fetch(`${gw.url}${pathAndQuery}`, { method: 'POST', headers: { 'x-genai-api-key': gw.key, 'content-type': 'application/json' }, body: BODY })
}

t.test('what the provider answers to alt=proto: binary the meter cannot read', async (t) => {
  const gw = await startTestGateway()
  t.teardown(() => gw.close())
  const res = await fetch(`${gw.mock.url}/v1beta/models/gemini-2.5-flash:generateContent?alt=proto`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: BODY })
  t.equal(res.status, 200)
  t.equal(res.headers.get('content-type'), 'application/x-protobuf')
  t.equal((await res.arrayBuffer()).byteLength, PROTO_ANSWER_BYTES, 'a 200 KB answer without JSON usage')
})

for (const backend of ['sqlite', 'pg'] as Backend[]) {
  t.test(`alt values an operation cannot meter are refused before the hold, nothing forwarded (${backend})`, async (t) => {
    const gw = await startTestGateway({ backend, credit: '1.00' })
    t.teardown(() => gw.close())
    const before = await ledgerState(gw)
    const refused = [
      `${PATH}:generateContent?alt=proto`,
      `${PATH}:generateContent?ALT=proto`,
      `${PATH}:generateContent?%61lt=media`,
      `${PATH}:generateContent?alt=sse`,
      `${PATH}:generateContent?alt=json&alt=proto`,
      `${PATH}:streamGenerateContent?alt=proto`
    ]
    for (const path of refused) {
      const res = await post(gw, path)
      const body = await res.json() as { error: { code: number, status: string, message: string } }
      t.equal(res.status, 400, `${path}: 400`)
      t.equal(body.error.status, 'MODEL_PARAMETER_UNSUPPORTED', `${path}: MODEL_PARAMETER_UNSUPPORTED in the genai envelope`)
      t.match(body.error.message, /"alt"/, 'the message names the query parameter')
      t.equal(res.headers.get('x-gateway-billed'), 'false')
    }
    t.equal(gw.mock.calls.length, 0, 'the provider saw no request')
    const after = await ledgerState(gw)
    t.equal(after.balance, before.balance, 'nothing billed')
    t.equal(after.entries.length, before.entries.length, 'no ledger entry')
    const rows = await checkBounded(t, [gw], refused.length)
    t.ok(rows.every((r) => r.errorCode === 'MODEL_PARAMETER_UNSUPPORTED' && r.holdId === null), 'each row: refused, never held')
  })

  t.test(`the meterable values pass, and an undeclared parameter is not forwarded (${backend})`, async (t) => {
    const gw = await startTestGateway({ backend, credit: '1.00' })
    t.teardown(() => gw.close())
    const json = await post(gw, `${PATH}:generateContent?alt=json`)
    t.equal(json.status, 200)
    await json.text()
    const sse = await post(gw, `${PATH}:streamGenerateContent?alt=sse`)
    t.equal(sse.status, 200)
    t.match(await sse.text(), /^data: /, 'the stream is SSE')
    const other = await post(gw, `${PATH}:generateContent?fields=candidates`)
    t.equal(other.status, 200)
    await other.text()
    t.same(gw.mock.calls.map((c) => c.path), [
      '/v1beta/models/gemini-2.5-flash:generateContent?alt=json',
      '/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse',
      '/v1beta/models/gemini-2.5-flash:generateContent'
    ], 'declared values go upstream as sent; `fields` (which could strip usageMetadata) does not')
    const rows = await checkBounded(t, [gw], 3)
    t.ok(rows.every((r) => r.billingStatus === 'BILLED' && r.usageReported === true), 'each billed from reported usage')
  })
}
