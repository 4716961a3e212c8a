// Images priced by quality and size. gpt-image-1 was priced 0.04 an image whatever it rendered,
// and the provider bills high quality at 1536x1024 at 0.25 (its output tokens at $40 / 1M): a
// tenant asking for `quality: "high"` paid a sixth of the operator's cost. dall-e-3 hd likewise.
// Now each image of `n` is held at the entry the request names (`auto`, gpt-image-1's default, at
// the dearest), charged at the entry the answer says it rendered (else the request's), and a
// quality or size the table does not price is refused with MODEL_PARAMETER_UNSUPPORTED naming
// the parameter. Through the OpenAI SDK, on both stores, the mock rendering what a provider could.
import { OpenAI } from 'openai'
import t from 'tap'
import { ledgerState, nanos, settledRow } from './helpers/billing.js'
import { capturingFetch } from './helpers/capture-fetch.js'
import { startTestGateway, type Backend } from './helpers/gateway.js'
import { checkBounded, refusalCode } from './helpers/wallet-bound.js'

/** gpt-image-1's text input: $5.00 / 1M tokens = 5,000 nano-units a token. */
const GPT_IMAGE_INPUT_NANOS = 5000n

for (const backend of ['sqlite', 'pg'] as Backend[]) {
  t.test(`dall-e-3: the default is standard 1024x1024, hd 1792x1024 is 0.12 an image (${backend})`, async (t) => {
    const gw = await startTestGateway({ backend, credit: '5.00' })
    t.teardown(() => gw.close())
    const cap = capturingFetch()
    const openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: gw.key, maxRetries: 0, fetch: cap.fetch })
    await openai.images.generate({ model: 'openai/dall-e-3', prompt: 'a lighthouse' })
    const plain = await settledRow(gw, cap.last().response?.headers.get('x-request-id') ?? '')
    t.equal(plain.held, nanos('0.04'), 'held one standard 1024x1024 image')
    t.equal(plain.cost, nanos('0.04'), 'charged it')
    t.same(plain.usage?.imageTier, { quality: 'standard', size: '1024x1024' }, 'the receipt names the entry')
    await openai.images.generate({ model: 'openai/dall-e-3', prompt: 'a lighthouse', quality: 'hd', size: '1792x1024' })
    const hd = await settledRow(gw, cap.last().response?.headers.get('x-request-id') ?? '')
    t.equal(hd.held, nanos('0.12'))
    t.equal(hd.cost, nanos('0.12'), 'hd 1792x1024 is 0.12, not the 0.04 of before')
    await checkBounded(t, [gw], 2)
    t.equal((await ledgerState(gw)).balance, nanos('5.00') - nanos('0.16'))
  })

  t.test(`gpt-image-1: auto is held at the dearest entry and charged at what was rendered (${backend})`, async (t) => {
    const gw = await startTestGateway({ backend, credit: '5.00' })
    t.teardown(() => gw.close())
    const cap = capturingFetch()
    const openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: gw.key, maxRetries: 0, fetch: cap.fetch })
    const res = await openai.images.generate({ model: 'openai/gpt-image-1', prompt: 'two foxes', n: 2 })
    t.equal(res.data?.length, 2)
    const row = await settledRow(gw, cap.last().response?.headers.get('x-request-id') ?? '')
    const input = BigInt(row.usage?.inputTokens ?? -1)
    t.ok(input > 0n, 'the prompt\'s input tokens were reported')
    t.ok(row.held !== null && row.held >= 2n * nanos('0.25'), `held 2 × 0.25 (high, 1024x1536) and the prompt: ${String(row.held)}`)
    t.equal(row.cost, 2n * nanos('0.042') + input * GPT_IMAGE_INPUT_NANOS, 'charged 2 × medium 1024x1024 (what the answer says) and the prompt')
    t.same(row.usage?.imageTier, { quality: 'medium', size: '1024x1024' })
    await checkBounded(t, [gw], 1)
  })

  t.test(`gpt-image-1: a provider rendering auto at its dearest costs the hold at most (${backend})`, async (t) => {
    const gw = await startTestGateway({ backend, credit: '5.00' })
    t.teardown(() => gw.close())
    const cap = capturingFetch()
    const openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: gw.key, maxRetries: 0, fetch: cap.fetch })
    await openai.images.generate({ model: 'openai/gpt-image-1', prompt: 'a storm', n: 4, quality: 'auto', size: 'auto' }, { headers: { 'x-mock-image-rendered': 'high/1536x1024' } })
    const row = await settledRow(gw, cap.last().response?.headers.get('x-request-id') ?? '')
    t.equal(row.cost, 4n * nanos('0.25') + BigInt(row.usage?.inputTokens ?? 0) * GPT_IMAGE_INPUT_NANOS, '4 × high 1536x1024')
    t.equal(row.overage, null, 'within the hold')
    await checkBounded(t, [gw], 1)
  })

  t.test(`gpt-image-1: high 1536x1024 × 3 does not fit a 0.50 wallet (${backend})`, async (t) => {
    const gw = await startTestGateway({ backend, credit: '0.50' })
    t.teardown(() => gw.close())
    const openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: gw.key, maxRetries: 0 })
    const err = await openai.images.generate({ model: 'openai/gpt-image-1', prompt: 'a storm', n: 3, quality: 'high', size: '1536x1024' }).then(() => null, (e: unknown) => e)
    t.equal(refusalCode(err), 'BILLING_INSUFFICIENT_CREDITS', '3 × 0.25 is held, not 3 × 0.04')
    const low = await openai.images.generate({ model: 'openai/gpt-image-1', prompt: 'a storm', n: 3, quality: 'low', size: '1024x1024' })
    t.equal(low.data?.length, 3, 'three low-quality images fit')
    t.equal(gw.mock.calls.length, 1, 'only the request that fit reached the provider')
    await checkBounded(t, [gw], 2)
  })

  t.test(`a quality or size not priced is refused, naming the parameter (${backend})`, async (t) => {
    const gw = await startTestGateway({ backend, credit: '5.00' })
    t.teardown(() => gw.close())
    const openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: gw.key, maxRetries: 0 })
    const cases: Array<[string, Record<string, unknown>, string]> = [
      ['openai/gpt-image-1', { quality: 'ultra' }, 'quality'],
      ['openai/gpt-image-1', { size: '4096x4096' }, 'size'],
      ['openai/gpt-image-1', { quality: 7 }, 'quality'],
      ['openai/dall-e-3', { quality: 'hd', size: '512x512' }, 'size'],
      ['openai/dall-e-3', { quality: 'low' }, 'quality']
    ]
    for (const [model, extra, param] of cases) {
      const err = await openai.images.generate({ model, prompt: 'x', ...extra } as unknown as OpenAI.ImageGenerateParams).then(() => null, (e: unknown) => e) as { status?: number, error?: { code?: string, param?: string } } | null
      t.equal(err?.status, 400, `${model} ${JSON.stringify(extra)}: 400`)
      t.equal(err?.error?.code, 'MODEL_PARAMETER_UNSUPPORTED')
      t.equal(err?.error?.param, param, `names ${param}`)
    }
    t.equal(gw.mock.calls.length, 0, 'nothing reached the provider')
    await checkBounded(t, [gw], cases.length)
    t.equal((await ledgerState(gw)).balance, nanos('5.00'))
  })
}
