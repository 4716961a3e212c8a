// Hostile client: `background: true` on /v1/responses. The provider answers `queued` with no
// usage and generates the whole answer later, after the request settled: the probe was billed
// an input estimate while the provider produced everything. The route declares `background` a
// deferred-work parameter, so the gateway refuses it before anything is held, forwarded or
// billed; on both stores, through the OpenAI SDK and on the wire.
import OpenAI from 'openai'
import t from 'tap'
import { startTestGateway, type Backend } from '../helpers/gateway.js'
import { ledgerState } from '../helpers/billing.js'

for (const backend of ['sqlite', 'pg'] satisfies Backend[]) {
  t.test(`background responses are refused (${backend})`, async (t) => {
    const gw = await startTestGateway({ backend })
    t.teardown(() => gw.close())
    const openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: gw.key, maxRetries: 0 })
    const before = await ledgerState(gw)

    t.test('through the SDK: APIError 400 MODEL_PARAMETER_UNSUPPORTED on `background`', async (t) => {
      const err = await openai.responses.create({ model: 'openai/gpt-4o-mini', input: 'write a novel', background: true }).then(() => null, (e: unknown) => e)
      t.ok(err instanceof OpenAI.APIError, 'APIError')
      if (!(err instanceof OpenAI.APIError)) return
      t.equal(err.status, 400)
      t.equal(err.code, 'MODEL_PARAMETER_UNSUPPORTED')
      t.equal(err.param, 'background')
    })

    t.test('on the wire: the chat envelope with every error header, not billed', async (t) => {
      for (const path of ['/v1/responses', '/responses']) {
        const res = await fetch(gw.url + path, {
          method: 'POST',
          headers: { ...gw.auth, 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'openai/gpt-4o', input: 'x', background: 'true' })
        })
        t.equal(res.status, 400, path)
        t.equal(res.headers.get('x-gateway-error-code'), 'MODEL_PARAMETER_UNSUPPORTED')
        t.equal(res.headers.get('x-gateway-error-reference'), 'GW-MODEL-3016')
        t.equal(res.headers.get('x-gateway-billed'), 'false')
        t.equal(res.headers.get('cache-control'), 'no-store')
        t.ok(res.headers.get('x-request-id'))
        t.match(await res.json(), { error: { code: 'MODEL_PARAMETER_UNSUPPORTED', param: 'background', billing: { status: 'NOT_BILLED' } } })
      }
    })

    t.test('nothing reached the provider, nothing was held or charged', async (t) => {
      t.equal(gw.mock.calls.length, 0, 'no upstream call')
      const after = await ledgerState(gw)
      t.equal(after.openHolds, 0)
      t.equal(after.balance, before.balance, 'the wallet is as it was')
      t.equal(after.charges.length, 0)
    })

    t.test('background: false asks for nothing deferred and is served', async (t) => {
      const r = await openai.responses.create({ model: 'openai/gpt-4o-mini', input: 'hi', background: false })
      t.equal(r.object, 'response')
      t.equal(gw.mock.calls.length, 1)
    })
  })
}
