// Hostile client, multipart model field: the gateway prices the model it read from the form, so
// the provider must get exactly that part rewritten to the upstream name. An unquoted
// `name=model` is the model part; `name="model"` inside another parameter or another header
// names nothing; a second model part (which a provider's parser might read instead) is refused
// before anything is sent or billed. Against a running gateway and the mock upstream (which
// parses the form with busboy, as a provider would), on both stores.
import t from 'tap'
import { ledgerState } from '../helpers/billing.js'
import { startTestGateway, type Backend, type TestGateway } from '../helpers/gateway.js'
import { wavFile } from '../helpers/wire.js'

/** The ledger once the requests of earlier tests have settled (settlement follows the answer); holds are read first, then the rest. */
async function settledLedger (gw: TestGateway): Promise<Awaited<ReturnType<typeof ledgerState>>> {
  for (let i = 0; i < 250; i++) {
    if ((await gw.services.store.ledger.openHolds(gw.account.id)).length === 0) return await ledgerState(gw)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  throw new Error('earlier requests did not settle')
}

const BOUNDARY = 'hostile-boundary-7f3a'
const WAV = wavFile(8000)

/** A body from raw part header blocks: the test controls every byte of every header. */
function form (parts: Array<{ headers: string[], value: string | Buffer }>): Buffer {
  const chunks: Buffer[] = []
  for (const p of parts) {
    chunks.push(Buffer.from(`--${BOUNDARY}\r\n${p.headers.join('\r\n')}\r\n\r\n`), Buffer.from(p.value), Buffer.from('\r\n'))
  }
  chunks.push(Buffer.from(`--${BOUNDARY}--\r\n`))
  return Buffer.concat(chunks)
}

const file = { headers: ['Content-Disposition: form-data; name="file"; filename="a.wav"', 'Content-Type: audio/wav'], value: WAV }

async function transcribe (gw: TestGateway, body: Buffer): Promise<{ status: number, code: string | null, billed: string | null, requestId: string, text: string }> {
  const res = await fetch(`${gw.url}/v1/audio/transcriptions`, {
    method: 'POST',
    headers: { ...gw.auth, 'content-type': `multipart/form-data; boundary=${BOUNDARY}` },
    body
  })
  return { status: res.status, code: res.headers.get('x-gateway-error-code'), billed: res.headers.get('x-gateway-billed'), requestId: res.headers.get('x-request-id') ?? '', text: await res.text() }
}

/** `body` with the one occurrence of `from` replaced: what the provider must receive. */
function replaced (body: Buffer, from: string, to: string): Buffer {
  const at = body.indexOf(from)
  if (at === -1 || body.indexOf(from, at + 1) !== -1) throw new Error(`expected exactly one ${from}`)
  return Buffer.concat([body.subarray(0, at), Buffer.from(to), body.subarray(at + from.length)])
}

for (const backend of ['sqlite', 'pg'] as Backend[]) {
  t.test(`multipart model field on ${backend}`, async (t) => {
    const gw = await startTestGateway({ backend })
    t.teardown(() => gw.close())

    const accepted: Array<[string, Buffer, string]> = [
      ['an unquoted name=model is the model part', form([
        file, { headers: ['Content-Disposition: form-data; name=model'], value: 'openai/whisper-1' }
      ]), '\r\n\r\nopenai/whisper-1\r\n'],
      ['name="model" inside another header of another part names nothing', form([
        { headers: ['Content-Disposition: form-data; name="prompt"', 'Content-Type: text/plain; name="model"'], value: 'openai/whisper-1 is what I said' },
        file, { headers: ['Content-Disposition: form-data; name="model"'], value: 'openai/whisper-1' }
      ]), '"model"\r\n\r\nopenai/whisper-1\r\n'],
      ['name="model" inside a quoted filename names nothing', form([
        { headers: ['Content-Disposition: form-data; name="file"; filename="x name=\\"model\\""', 'Content-Type: audio/wav'], value: WAV },
        { headers: ['content-disposition: FORM-DATA;name = "model"'], value: 'openai/whisper-1' }
      ]), '"model"\r\n\r\nopenai/whisper-1\r\n'],
      ['the RFC 8187 extended name* form is the model part', form([
        file, { headers: ["Content-Disposition: form-data; name*=utf-8''model"], value: 'openai/whisper-1' }
      ]), 'model\r\n\r\nopenai/whisper-1\r\n']
    ]
    for (const [name, body, needle] of accepted) {
      t.test(name, async (t) => {
        gw.mock.reset()
        const res = await transcribe(gw, body)
        t.equal(res.status, 200, res.text)
        const [call] = await gw.mock.waitForCalls(1)
        t.equal(call?.form?.fields.model, 'whisper-1', 'the provider reads the upstream model name')
        t.ok(call?.body.equals(replaced(body, needle, needle.replace('openai/whisper-1', 'whisper-1'))), 'every other byte is the client\'s')
      })
    }

    const refused: Array<[string, Buffer]> = [
      ['two model parts', form([
        { headers: ['Content-Disposition: form-data; name="model"'], value: 'openai/gpt-4o-mini-transcribe' },
        file, { headers: ['Content-Disposition: form-data; name="model"'], value: 'openai/whisper-1' }
      ])],
      ['a model part under another disposition type next to the form field', form([
        { headers: ['Content-Disposition: attachment; name="model"'], value: 'openai/gpt-4o-mini-transcribe' },
        file, { headers: ['Content-Disposition: form-data; name="model"'], value: 'openai/whisper-1' }
      ])],
      ['an unquoted and a quoted model part', form([
        { headers: ['Content-Disposition: form-data; name=model'], value: 'openai/whisper-1' },
        file, { headers: ['Content-Disposition: form-data; name="model"'], value: 'openai/whisper-1' }
      ])]
    ]
    for (const [name, body] of refused) {
      t.test(`${name}: refused, nothing sent or billed`, async (t) => {
        gw.mock.reset()
        const before = await settledLedger(gw)
        const res = await transcribe(gw, body)
        t.equal(res.status, 400, res.text)
        t.equal(res.code, 'REQUEST_INVALID')
        t.equal(res.billed, 'false')
        t.match(JSON.parse(res.text), { error: { param: 'model' } })
        t.equal(gw.mock.calls.length, 0, 'the provider got nothing')
        // Refused while the body is parsed: no hold was ever placed, so none can be open now.
        const after = await ledgerState(gw)
        t.equal(after.balance, before.balance, 'balance unchanged')
        t.equal(after.openHolds, 0, 'no hold placed')
      })
    }
  })
}
