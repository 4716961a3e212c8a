// Audio input tokens cost more than text input tokens, and the catalogue priced them as text:
// gpt-4o-mini-transcribe bills audio input at $3.00 per 1M tokens (text input $1.25, output
// $5.00; OpenAI's price list, 2025-08), and the gateway charged every input token at 1.25, so a
// transcription was served for 42% of its audio cost. Gemini 2.5 Flash bills audio input at
// $1.00 per 1M against $0.30 for text, image and video; the gateway charged 0.30. Now the
// transcription model's input price is its audio price (its few prompt tokens are over-charged
// by 1.75 per 1M), and audio input to gemini-2.5-flash is refused (MODEL_AUDIO_INPUT_UNSUPPORTED)
// until audio tokens are priced apart. Through the official SDKs, on both stores.
import { GoogleGenAI } from '@google/genai'
import { OpenAI, toFile } from 'openai'
import t from 'tap'
import { ledgerState, nanos, waitForRows } from './helpers/billing.js'
import { startTestGateway, type Backend } from './helpers/gateway.js'
import { refusalCode } from './helpers/wallet-bound.js'
import { wavFile } from './helpers/wire.js'

/** gpt-4o-mini-transcribe's provider prices, nano-units per 1M tokens. */
const TRANSCRIBE = { audioIn: nanos('3.00'), textIn: nanos('1.25'), out: nanos('5.00') }
const PER = 1_000_000n

const ceil = (n: bigint, d: bigint): bigint => (n + d - 1n) / d

for (const backend of ['sqlite', 'pg'] as Backend[]) {
  t.test(`gpt-4o-mini-transcribe: a minute of audio is charged at least the provider's audio price (${backend})`, async (t) => {
    const gw = await startTestGateway({ backend })
    t.teardown(() => gw.close())
    const openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: gw.key, maxRetries: 0 })
    const start = await ledgerState(gw)
    const answer = await openai.audio.transcriptions.create({ model: 'openai/gpt-4o-mini-transcribe', file: await toFile(wavFile(8000 * 60), 'minute.wav', { type: 'audio/wav' }) })
    const usage = answer.usage
    if (usage?.type !== 'tokens') throw new Error('the provider reports tokens for this model')
    const audio = BigInt(usage.input_token_details?.audio_tokens ?? 0)
    const text = BigInt(usage.input_token_details?.text_tokens ?? 0)
    t.ok(audio > 0n, `the provider counted ${audio} audio tokens`)
    await waitForRows([gw], 1) // the row is written once the charge is settled
    const providerBill = ceil(audio * TRANSCRIBE.audioIn + text * TRANSCRIBE.textIn + BigInt(usage.output_tokens) * TRANSCRIBE.out, PER)
    const charged = (await ledgerState(gw)).charged - start.charged
    t.ok(charged >= providerBill, `charged ${charged}, at least the provider's bill ${providerBill}`)
  })

  t.test(`gemini-2.5-flash: audio input is refused before anything is held or sent (${backend})`, async (t) => {
    const gw = await startTestGateway({ backend })
    t.teardown(() => gw.close())
    const genai = new GoogleGenAI({ apiKey: gw.key, httpOptions: { baseUrl: `${gw.url}/genai`, retryOptions: { attempts: 1 } } })
    const inline = await genai.models.generateContent({
      model: 'genai/gemini-2.5-flash',
      contents: [{ role: 'user', parts: [{ inlineData: { mimeType: 'audio/wav', data: wavFile(8000).toString('base64') } }, { text: 'Transcribe' }] }]
    }).then(() => null, (e: unknown) => e)
    t.equal(refusalCode(inline), 'MODEL_AUDIO_INPUT_UNSUPPORTED', 'inline audio through :generateContent')
    const openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: gw.key, maxRetries: 0 })
    const chat = await openai.chat.completions.create({
      model: 'genai/gemini-2.5-flash',
      messages: [{ role: 'user', content: [{ type: 'input_audio', input_audio: { data: wavFile(8000).toString('base64'), format: 'wav' } }] }]
    }).then(() => null, (e: unknown) => e)
    t.equal(refusalCode(chat), 'MODEL_AUDIO_INPUT_UNSUPPORTED', 'input_audio through the chat endpoint')
    t.equal(gw.mock.calls.length, 0, 'nothing reached the provider')
    const ledger = await ledgerState(gw)
    t.equal(ledger.charged, 0n, 'nothing charged')
    t.equal(ledger.openHolds, 0, 'nothing held')
  })
}
