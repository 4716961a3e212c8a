// docs/quickstart.md's (and the README's first screen's) base URLs, tested as written: the three official SDKs are pointed at the
// exact URLs the doc gives (read from the doc; only the port is the test gateway's), call the
// models it names with a key, and the charge shows in the wallet and the request log.
import { readFileSync } from 'node:fs'
import Anthropic from '@anthropic-ai/sdk'
import { GoogleGenAI } from '@google/genai'
import OpenAI from 'openai'
import t from 'tap'
import { waitForRows } from '../helpers/billing.js'
import { startTestGateway } from '../helpers/gateway.js'
import { repoPath } from '../helpers/paths.js'

const DOC = readFileSync(repoPath('docs', 'quickstart.md'), 'utf8')
const README = readFileSync(repoPath('README.md'), 'utf8')

/** The bold base URL the doc gives after `label`, e.g. OpenAI (`openai`): base URL **`…`**. */
function documented (label: string): string {
  const at = DOC.indexOf(label)
  const m = /base URL \*\*`(http:\/\/127\.0\.0\.1:8080[^`]*)`\*\*/.exec(DOC.slice(at))
  if (at === -1 || !m?.[1]) throw new Error(`docs/quickstart.md gives no base URL for ${label}`)
  return m[1]
}

t.test('the quickstart base URLs reach the gateway with each SDK, and each call is billed', async (t) => {
  const gw = await startTestGateway({ credit: '5.00' })
  t.teardown(() => gw.close())
  const port = new URL(gw.url).port
  const at = (documentedUrl: string): string => documentedUrl.replace('127.0.0.1:8080', `127.0.0.1:${port}`)
  const urls = { openai: documented('OpenAI (`openai`)'), anthropic: documented('Anthropic (`@anthropic-ai/sdk`)'), genai: documented('Google GenAI (`@google/genai`)') }
  t.same(urls, { openai: 'http://127.0.0.1:8080/v1', anthropic: 'http://127.0.0.1:8080', genai: 'http://127.0.0.1:8080/genai' }, 'the doc spells out the three base URLs')
  for (const model of ['openai/gpt-4o-mini', 'anthropic/claude-sonnet-4', 'genai/gemini-2.5-flash']) {
    t.ok(DOC.includes(`'${model}'`) && gw.config.models.some((m) => m.id === model), `${model} is in the doc and the catalogue`)
    t.ok(README.includes(`model: '${model}'`), `the README's first screen calls ${model}`)
  }
  // The README's first screen constructs each SDK with these same URLs (exercised below).
  t.ok(README.includes(`new OpenAI({ baseURL: '${urls.openai}'`), 'README: the OpenAI SDK on the documented base URL')
  t.ok(README.includes(`new Anthropic({ baseURL: '${urls.anthropic}'`), 'README: the Anthropic SDK on the documented base URL')
  t.ok(README.includes(`httpOptions: { baseUrl: '${urls.genai}' }`), 'README: the GenAI SDK on the documented base URL')

  const openai = new OpenAI({ baseURL: at(urls.openai), apiKey: gw.key, maxRetries: 0 })
  const answer = await openai.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'Hello' }] })
  t.type(answer.choices[0]?.message.content, 'string', 'OpenAI SDK: an answer')

  const anthropic = new Anthropic({ baseURL: at(urls.anthropic), apiKey: gw.key, maxRetries: 0 })
  const message = await anthropic.messages.create({ model: 'anthropic/claude-sonnet-4', max_tokens: 64, messages: [{ role: 'user', content: 'Hello' }] })
  t.equal(message.type, 'message', 'Anthropic SDK: a message')

  const genai = new GoogleGenAI({ apiKey: gw.key, httpOptions: { baseUrl: at(urls.genai), retryOptions: { attempts: 1 } } })
  const result = await genai.models.generateContent({ model: 'genai/gemini-2.5-flash', contents: 'Hello' })
  t.type(result.text, 'string', 'GenAI SDK: an answer')

  // A request's row is written once its charge settled, a moment after its answer.
  const rows = await waitForRows([gw], 3)
  t.same(rows.map((r) => r.answeredModel).sort(), ['anthropic/claude-sonnet-4', 'genai/gemini-2.5-flash', 'openai/gpt-4o-mini'], 'one request log row per call')
  t.ok(rows.every((r) => r.billingStatus === 'BILLED' && r.cost !== null && r.cost > 0n), 'each call was billed')
  const wallet = await gw.services.store.ledger.wallet(gw.account.id)
  const charged = rows.reduce((sum, r) => sum + (r.cost ?? 0n), 0n)
  t.equal(wallet.balance, 5_000_000_000n - charged, 'the wallet shows the charge')
})
