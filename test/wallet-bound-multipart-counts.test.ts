// Counts sent in multipart forms. gpt-image-1 edits were priced per call, so `n: 10` rendered ten
// images (the provider bills each one's output tokens) for the price of one call: 0.05. Now the
// edit model is priced per image, held and charged for `n`. And a count the gateway bounds the
// hold with (`n`, Sora's `seconds`) sent twice, or as a file part, was read by the gateway one way
// (the last plain field) while the provider may read it another (the first, or the file's text):
// such a form is refused (REQUEST_INVALID naming the field) before anything is held or sent, as
// a second `model` field already was. Through the OpenAI SDK and hand-built forms, on both stores.
import { OpenAI, toFile } from 'openai'
import t from 'tap'
import { expectedCost, ledgerState, priceOf, waitForRows } from './helpers/billing.js'
import { startTestGateway, type Backend, type TestGateway } from './helpers/gateway.js'
import { multipartBody, type MultipartPart } from './helpers/wire.js'

const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==', 'base64')
const image: MultipartPart = { name: 'image', value: PNG, filename: 'a.png', contentType: 'image/png' }

async function postForm (gw: TestGateway, path: string, parts: MultipartPart[]): Promise<{ status: number, code?: string, param?: string }> {
  const { body, contentType } = multipartBody(parts)
  const res = await fetch(`${gw.url}${path}`, { method: 'POST', headers: { ...gw.auth, 'content-type': contentType }, body })
  const json = await res.json() as { error?: { code?: string, param?: string } }
  return { status: res.status, ...(json.error?.code === undefined ? {} : { code: json.error.code }), ...(json.error?.param === undefined ? {} : { param: json.error.param }) }
}

for (const backend of ['sqlite', 'pg'] as Backend[]) {
  t.test(`gpt-image-1 edits: n images are held and charged n times (${backend})`, async (t) => {
    const gw = await startTestGateway({ backend })
    t.teardown(() => gw.close())
    const openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: gw.key, maxRetries: 0 })
    const one = await ledgerState(gw)
    await openai.images.edit({ model: 'openai/gpt-image-1-edit', image: await toFile(PNG, 'a.png', { type: 'image/png' }), prompt: 'a hat' })
    await waitForRows([gw], 1) // the row is written once the charge is settled
    const ten = await ledgerState(gw)
    const answer = await openai.images.edit({ model: 'openai/gpt-image-1-edit', image: await toFile(PNG, 'a.png', { type: 'image/png' }), prompt: 'a hat', n: 10 })
    await waitForRows([gw], 2)
    const end = await ledgerState(gw)
    t.equal(answer.data?.length, 10, 'the provider rendered ten images')
    const single = ten.charged - one.charged
    t.ok(single > 0n, 'one image is charged')
    t.equal(end.charged - ten.charged, 10n * single, 'ten images cost ten times one')
    // `auto`: charged at what the answer says it rendered (the mock's default, medium 1024x1024).
    t.equal(single, expectedCost(priceOf('openai/gpt-image-1-edit'), { images: 1, imageTier: { quality: 'medium', size: '1024x1024' } }), 'at the model\'s price an image')
  })

  t.test(`a bounding count sent twice or as a file part is refused before anything is sent (${backend})`, async (t) => {
    const gw = await startTestGateway({ backend })
    t.teardown(() => gw.close())
    const edit = (extra: MultipartPart[]): MultipartPart[] => [{ name: 'model', value: 'openai/gpt-image-1-edit' }, { name: 'prompt', value: 'x' }, ...extra, image]
    const video = (extra: MultipartPart[]): MultipartPart[] => [{ name: 'model', value: 'openai/sora-2' }, { name: 'prompt', value: 'x' }, ...extra]
    const cases: Array<[string, string, MultipartPart[], string]> = [
      ['n twice', '/v1/images/edits', edit([{ name: 'n', value: '1' }, { name: 'n', value: '10' }]), 'n'],
      ['n as a file part', '/v1/images/edits', edit([{ name: 'n', value: '10', filename: 'n.txt', contentType: 'text/plain' }]), 'n'],
      ['seconds twice', '/v1/videos', video([{ name: 'seconds', value: '4' }, { name: 'seconds', value: '12' }]), 'seconds'],
      ['seconds as a file part', '/v1/videos', video([{ name: 'seconds', value: '12', filename: 's.txt', contentType: 'text/plain' }]), 'seconds']
    ]
    for (const [name, path, parts, param] of cases) {
      const r = await postForm(gw, path, parts)
      t.same(r, { status: 400, code: 'REQUEST_INVALID', param }, name)
    }
    t.equal(gw.mock.calls.length, 0, 'nothing reached the provider')
    const ledger = await ledgerState(gw)
    t.equal(ledger.charged, 0n, 'nothing charged')
    t.equal(ledger.openHolds, 0, 'nothing held')
  })
}
