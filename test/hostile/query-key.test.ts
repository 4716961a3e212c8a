// Hostile client, query strings: a key (or anything else) smuggled in the query under an
// encoded or re-cased name (`?k%65y=`, `?%6Bey=`, `?KEY=`) never reaches the provider; only the
// parameters a provider allows pass (genai `alt=sse`, which the official SDK's streaming needs).
// Against a running gateway and the mock upstream, on both stores.
import { GoogleGenAI } from '@google/genai'
import t from 'tap'
import { forwardedQuery } from '../../plugins/concerns/upstream/allow-lists.js'
import { startTestGateway, type Backend } from '../helpers/gateway.js'

const SMUGGLED = ['key=plain', 'k%65y=encoded-e', '%6Bey=encoded-k', 'KEY=upper', 'Key=mixed', '%4B%45%59=all-encoded', 'k%65y', 'ke%79=encoded-y', 'key%00=nul']

t.test('forwardedQuery keeps only allowed names, compared decoded and lower-case', async (t) => {
  const allowed = new Set(['alt'])
  t.equal(forwardedQuery('', allowed), '')
  t.equal(forwardedQuery('?', allowed), '')
  t.equal(forwardedQuery(`?${SMUGGLED.join('&')}`, allowed), '', 'every key variant is dropped')
  t.equal(forwardedQuery(`?${SMUGGLED.join('&')}&alt=sse`, allowed), '?alt=sse')
  t.equal(forwardedQuery('?ALT=sse', allowed), '?alt=sse', 'an allowed name goes out canonical')
  t.equal(forwardedQuery('?%61lt=sse&x=1', allowed), '?alt=sse')
  t.equal(forwardedQuery('?alt=a%20b', allowed), '?alt=a%20b', 'the value goes as sent')
  t.equal(forwardedQuery('?%E0%A4%A=1&alt=sse', allowed), '?alt=sse', 'a malformed name is dropped, not thrown')
  t.equal(forwardedQuery('?alt=sse', new Set()), '', 'nothing passes an empty list')
})

for (const backend of ['sqlite', 'pg'] as Backend[]) {
  t.test(`query parameters on ${backend}`, async (t) => {
    const gw = await startTestGateway({ backend })
    t.teardown(() => gw.close())

    t.test('chat: every key variant and unknown parameter is stripped', async (t) => {
      gw.mock.reset()
      const res = await fetch(`${gw.url}/v1/chat/completions?${SMUGGLED.join('&')}&api-version=2024-01-01`, {
        method: 'POST',
        headers: { ...gw.auth, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] })
      })
      t.equal(res.status, 200, await res.text())
      const [call] = await gw.mock.waitForCalls(1)
      t.equal(call?.path, '/v1/chat/completions', 'no query string reaches the provider')
    })

    t.test('genai: alt=sse passes, the key variants do not', async (t) => {
      gw.mock.reset()
      const url = `${gw.url}/genai/v1beta/models/genai%2Fgemini-2.5-flash:streamGenerateContent?${SMUGGLED.join('&')}&alt=sse`
      const res = await fetch(url, {
        method: 'POST',
        headers: { 'x-genai-api-key': gw.key, 'content-type': 'application/json' },
        body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'hi' }] }] })
      })
      const text = await res.text()
      t.equal(res.status, 200, text)
      const [call] = await gw.mock.waitForCalls(1)
      t.equal(call?.path, '/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse')
      for (const variant of SMUGGLED) t.notOk(call?.path.includes(variant.split('=')[1] ?? variant), `${variant} is not forwarded`)
    })

    t.test('the official genai SDK still streams through the allow-list', async (t) => {
      gw.mock.reset()
      const genai = new GoogleGenAI({ apiKey: gw.key, httpOptions: { baseUrl: `${gw.url}/genai`, headers: { 'x-genai-api-key': gw.key }, retryOptions: { attempts: 1 } } })
      const stream = await genai.models.generateContentStream({ model: 'genai/gemini-2.5-flash', contents: 'hi' })
      let text = ''
      for await (const chunk of stream) text += chunk.text ?? ''
      t.ok(text.length > 0, 'the stream carried text')
      const [call] = await gw.mock.waitForCalls(1)
      t.match(call?.path, /\?alt=sse$/, 'alt=sse reached the provider')
      t.notOk(call?.path.includes(gw.key), 'the client key is not in the upstream URL')
    })
  })
}
