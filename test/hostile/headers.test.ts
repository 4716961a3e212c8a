// Hostile client, headers: a tenant sends every header that could pick the operator's provider
// organization or project, turn on a provider beta, claim another client address or carry a
// second credential; none reaches the provider. The provider answers with its account's own
// headers (organization, project, rate-limit counters, cookie); none reaches the client.
// Against a running gateway (the default gateway.yaml's allow-lists, as written) and the mock
// upstream, on both stores.
import { connect } from 'node:net'
import t from 'tap'
import { request } from 'undici'
import { ACCOUNT_HEADERS } from '../fixtures/mock-upstream/exchange.js'
import { startTestGateway, type Backend } from '../helpers/gateway.js'

/** What a tenant may try to smuggle upstream, by class. */
const HOSTILE: Record<string, Record<string, string>> = {
  'provider account selection': { 'openai-organization': 'org-victim', 'openai-project': 'proj_victim', 'x-goog-user-project': 'victim-project' },
  'provider betas': { 'openai-beta': 'assistants=v2', 'anthropic-beta': 'output-128k-2025-02-19' },
  'client address claims': { 'x-forwarded-for': '10.0.0.1', 'x-forwarded-host': 'internal', 'x-forwarded-proto': 'http', forwarded: 'for=10.0.0.1', 'x-real-ip': '10.0.0.1' },
  'second credentials': { 'api-key': 'azure-style-key', cookie: 'session=abc', 'proxy-authorization': 'Basic eDp5' },
  'client fingerprints and replays': { 'user-agent': 'evil-sdk/1.0', 'x-stainless-os': 'Linux', 'idempotency-key': 'shared-key-1', 'x-custom-anything': '1' }
}
const ALL_HOSTILE = Object.assign({}, ...Object.values(HOSTILE)) as Record<string, string>

interface Probe {
  name: string
  path: string
  body: unknown
  key: Record<string, string>
  /** Headers the provider must still receive from the client. */
  kept: Record<string, string>
  provider: keyof typeof ACCOUNT_HEADERS
  credential: [string, string]
}

for (const backend of ['sqlite', 'pg'] as Backend[]) {
  t.test(`header allow-lists on ${backend}`, async (t) => {
    const gw = await startTestGateway({ backend, mockControlHeaders: false })
    t.teardown(() => gw.close())
    const probes: Probe[] = [
      {
        name: 'chat completions (openai)',
        path: '/v1/chat/completions',
        body: { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] },
        key: { authorization: `Bearer ${gw.key}` },
        kept: { accept: 'application/json' },
        provider: 'openai',
        credential: ['authorization', 'Bearer upstream-openai-secret']
      },
      {
        name: 'messages (anthropic)',
        path: '/v1/messages',
        body: { model: 'anthropic/claude-haiku-3.5', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] },
        key: { 'x-api-key': gw.key },
        kept: { accept: 'application/json', 'anthropic-version': '2023-06-01' },
        provider: 'anthropic',
        credential: ['x-api-key', 'upstream-anthropic-secret']
      },
      {
        name: 'generateContent (genai)',
        path: '/genai/v1beta/models/genai%2Fgemini-2.5-flash:generateContent',
        body: { contents: [{ role: 'user', parts: [{ text: 'hi' }] }] },
        key: { 'x-genai-api-key': gw.key },
        kept: { accept: '*/*' },
        provider: 'gemini',
        credential: ['x-goog-api-key', 'upstream-genai-secret']
      }
    ]

    for (const probe of probes) {
      t.test(probe.name, async (t) => {
        gw.mock.reset()
        const res = await request(gw.url + probe.path, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...ALL_HOSTILE, ...probe.kept, ...probe.key },
          body: JSON.stringify(probe.body)
        })
        const text = await res.body.text()
        t.equal(res.statusCode, 200, text)
        const [call] = await gw.mock.waitForCalls(1)
        if (call === undefined) return
        for (const [klass, headers] of Object.entries(HOSTILE)) {
          for (const name of Object.keys(headers)) {
            if (name === probe.credential[0]) continue // the operator's own credential has this name
            t.notOk(name in call.headers, `request, ${klass}: ${name} is dropped`)
          }
        }
        t.equal(call.headers[probe.credential[0]], probe.credential[1], 'the provider gets the operator credential only')
        for (const [name, value] of Object.entries(probe.kept)) t.equal(call.headers[name], value, `request: ${name} is forwarded`)
        for (const name of Object.keys(probe.key)) {
          if (name !== probe.credential[0]) t.notOk(name in call.headers, `request: the client key header ${name} is dropped`)
        }
        t.notOk(JSON.stringify(call.headers).includes(gw.key), 'the client key reaches the provider nowhere')

        const sent = ACCOUNT_HEADERS[probe.provider] ?? {}
        t.ok(Object.keys(sent).length > 0, 'the mock sent provider account headers')
        for (const name of Object.keys(sent)) t.notOk(name in res.headers, `response: ${name} is dropped`)
        t.match(res.headers['content-type'], /json/, 'response: content-type is passed')
        t.match(res.headers['x-upstream-request-id'], /^req_mock_/, 'response: the provider request id comes back renamed')
        t.match(res.headers['x-request-id'], /^req_/, 'response: the gateway request id is its own')
        t.notOk(res.headers['x-request-id'] === res.headers['x-upstream-request-id'])
      })
    }

    t.test('a header the client names in Connection is not forwarded even when allowed', async (t) => {
      gw.mock.reset()
      // Raw bytes: HTTP clients rewrite a Connection header; a hostile client does not.
      const payload = JSON.stringify({ model: 'anthropic/claude-haiku-3.5', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] })
      const head = [
        'POST /v1/messages HTTP/1.1', `Host: ${new URL(gw.url).host}`, 'Content-Type: application/json',
        `x-api-key: ${gw.key}`, 'anthropic-version: 2023-06-01', 'Connection: close, anthropic-version',
        `Content-Length: ${Buffer.byteLength(payload)}`
      ].join('\r\n')
      const answer = await new Promise<string>((resolve, reject) => {
        const socket = connect(Number(new URL(gw.url).port), '127.0.0.1', () => { socket.write(`${head}\r\n\r\n${payload}`) })
        let text = ''
        socket.on('data', (d: Buffer) => { text += d.toString('latin1') })
        socket.on('end', () => resolve(text))
        socket.on('error', reject)
      })
      t.match(answer, /^HTTP\/1\.1 200 /, 'answered')
      const [call] = await gw.mock.waitForCalls(1)
      t.ok(call, 'forwarded')
      t.notOk(call !== undefined && 'anthropic-version' in call.headers, 'a hop-by-hop header stays with the gateway')
    })

    t.test('streamed answers (SSE) drop the provider headers too', async (t) => {
      gw.mock.reset()
      const res = await request(gw.url + '/v1/chat/completions', {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${gw.key}`, 'openai-organization': 'org-victim' },
        body: JSON.stringify({ model: 'openai/gpt-4o-mini', stream: true, messages: [{ role: 'user', content: 'hi' }] })
      })
      const text = await res.body.text()
      t.equal(res.statusCode, 200)
      t.match(text, /data: \[DONE\]/)
      for (const name of Object.keys(ACCOUNT_HEADERS.openai ?? {})) t.notOk(name in res.headers, `stream response: ${name} is dropped`)
      const [call] = await gw.mock.waitForCalls(1)
      t.notOk(call !== undefined && 'openai-organization' in call.headers, 'stream request: openai-organization is dropped')
    })
  })
}
