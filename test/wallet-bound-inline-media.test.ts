// Inline media (base64 in the body) was held at one token per body byte, "already bounded by its
// size". The providers bill media by what it shows, not by its bytes: a 1×1 PNG (~70 bytes) is
// 8,500 input tokens on gpt-4o-mini at high detail (2,833 + 5,667 for its one tile); a PDF page
// is ~1,500–3,000 tokens on Claude however few bytes it takes; a static video is 258 tokens per
// sampled frame on Gemini (`videoMetadata.fps` up to 24) in a few bytes a second. 20 concurrent
// gpt-4o-mini calls with 8 tiny images each, max_tokens 1, were held 0.000227 and charged
// 0.0102 each: an overage a tenant triggers on purpose, 45× its hold. Now an inline image adds
// the model's per-image bound (`url_media_item`), and inline media whose tokens its bytes do not
// bound (documents, video, audio other than OpenAI's input_audio) holds the context window, as
// media by URL does. Through the official SDKs, on both stores.
import Anthropic from '@anthropic-ai/sdk'
import { GoogleGenAI } from '@google/genai'
import { OpenAI } from 'openai'
import t from 'tap'
import { ledgerState, nanos } from './helpers/billing.js'
import { startTestGateway, type Backend } from './helpers/gateway.js'
import { checkBounded, refusalCode } from './helpers/wallet-bound.js'

const PNG_1X1 = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=='
/** gpt-4o-mini, detail high, the smallest image: 2,833 base tokens + 5,667 for its one 512 px tile. */
const MINI_TOKENS_PER_IMAGE = 2833 + 5667
const IMAGES = 8
const CALLS = 20

for (const backend of ['sqlite', 'pg'] as Backend[]) {
  t.test(`gpt-4o-mini: ${CALLS} calls at once with ${IMAGES} tiny inline images each, never charged above their holds (${backend})`, async (t) => {
    const gw = await startTestGateway({ backend, credit: '0.10' })
    t.teardown(() => gw.close())
    const openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: gw.key, maxRetries: 0 })
    const image = { type: 'image_url' as const, image_url: { url: `data:image/png;base64,${PNG_1X1}`, detail: 'high' as const } }
    const results = await Promise.allSettled(Array.from({ length: CALLS }, async () => await openai.chat.completions.create({
      model: 'openai/gpt-4o-mini',
      max_tokens: 1,
      messages: [{ role: 'user', content: [{ type: 'text', text: 'Describe' }, ...Array.from({ length: IMAGES }, () => image)] }]
    }, { headers: { 'x-mock-input-tokens': String(IMAGES * MINI_TOKENS_PER_IMAGE) } })))
    const served = results.filter((r) => r.status === 'fulfilled').length
    const refused = results.filter((r) => r.status === 'rejected' && refusalCode(r.reason) === 'BILLING_INSUFFICIENT_CREDITS').length
    t.equal(served + refused, CALLS, 'every call is served or refused for credit')
    t.ok(served > 0, `some are served (${served})`)
    await checkBounded(t, [gw], CALLS)
  })

  t.test(`claude: a base64 PDF of a few bytes read as 150,000 tokens, held within its hold (${backend})`, async (t) => {
    const gw = await startTestGateway({ backend, credit: '5.00' })
    t.teardown(() => gw.close())
    const anthropic = new Anthropic({ baseURL: gw.url, apiKey: gw.key, maxRetries: 0 })
    const pdf = Buffer.from('%PDF-1.4\n1 0 obj<</Type/Pages/Count 150/Kids[]>>endobj\n%%EOF').toString('base64')
    await anthropic.messages.create({
      model: 'anthropic/claude-haiku-3.5',
      max_tokens: 1,
      messages: [{ role: 'user', content: [{ type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: pdf } }, { type: 'text', text: 'Summarise' }] }]
    }, { headers: { 'x-mock-input-tokens': '150000' } })
    await checkBounded(t, [gw], 1)
  })

  t.test(`gemini: an inline video of a few bytes sampled at 24 fps, 900,000 tokens, held within its hold (${backend})`, async (t) => {
    const gw = await startTestGateway({ backend, credit: '5.00' })
    t.teardown(() => gw.close())
    const genai = new GoogleGenAI({ apiKey: gw.key, httpOptions: { baseUrl: `${gw.url}/genai`, retryOptions: { attempts: 1 } } })
    await genai.models.generateContent({
      model: 'genai/gemini-2.5-flash',
      contents: [{ role: 'user', parts: [{ inlineData: { mimeType: 'video/mp4', data: Buffer.from('static-frames').toString('base64') }, videoMetadata: { fps: 24 } }, { text: 'Describe' }] }],
      config: { maxOutputTokens: 1, httpOptions: { headers: { 'x-mock-input-tokens': '900000' } } }
    })
    await checkBounded(t, [gw], 1)
    t.ok((await ledgerState(gw)).balance >= nanos('4.70'), 'charged what the provider reported, 0.27')
  })
}
