// gpt-4o-mini-tts declared max_output_tokens 2,000, which is the model's input limit, not its
// output: OpenAI bills ~1,250 audio tokens a minute of speech ($12 / 1M, $0.015 a minute), and
// the endpoint takes 4,096 characters, several minutes of speech. A 4,000-character input streamed
// with `stream_format: "sse"` was held for 2,000 output tokens (0.0252) and the provider reported
// 4,000 (0.0504): an overage a tenant triggers on purpose. Now the model's output limit is the
// GPT-4o mini audio models' 16,384 tokens. Through the OpenAI SDK, on both stores.
import { OpenAI } from 'openai'
import t from 'tap'
import { startTestGateway, type Backend } from './helpers/gateway.js'
import { checkBounded } from './helpers/wallet-bound.js'

/** Within the endpoint's 4,096 characters; the mock reports one audio token a character. */
const INPUT = 'Read this slowly, one word at a time. '.repeat(105).slice(0, 4000)

for (const backend of ['sqlite', 'pg'] as Backend[]) {
  t.test(`gpt-4o-mini-tts: 4,000 characters of speech never cost more than their hold (${backend})`, async (t) => {
    const gw = await startTestGateway({ backend, credit: '5.00' })
    t.teardown(() => gw.close())
    const openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: gw.key, maxRetries: 0 })
    const res = await openai.audio.speech.create({ model: 'openai/gpt-4o-mini-tts', voice: 'alloy', input: INPUT, instructions: 'Very slowly.', stream_format: 'sse' })
    const body = await res.text()
    t.match(body, /speech\.audio\.done/, 'the whole stream arrived, with the provider\'s usage')
    const [row] = await checkBounded(t, [gw], 1)
    t.equal(row?.usage?.outputTokens, INPUT.length, 'the provider\'s report was billed')
    t.equal(row?.usageReported, true)
  })
}
