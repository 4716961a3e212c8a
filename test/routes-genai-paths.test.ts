// The generative-content family answers both path shapes clients send for every action:
// `/genai/v1beta/models/{model}:{action}` (the model id encoded or not) and
// `/genai/v1beta/{provider}/{name}:{action}`, which the Vercel AI SDK's google provider and
// LangChain's google-genai client build for a model id that contains a slash. Both shapes are
// aliases declared in gateway.yaml. For each shape the provider receives the same call, the
// request log names the same route, and a refusal is the same answer, byte for byte but for
// the request id.
import t, { type Test } from 'tap'
import type { RecordedCall } from './fixtures/mock-upstream.js'
import { settledRow } from './helpers/billing.js'
import { startTestGateway, type Backend, type TestGateway } from './helpers/gateway.js'
import { modelOf, writeTestConfig } from './helpers/test-config.js'

/** Every way a client writes the model segment of a path, for a public model id. */
function shapes (id: string): Array<{ name: string, prefix: string }> {
  return [
    { name: 'models/ + encoded id', prefix: `/genai/v1beta/models/${encodeURIComponent(id)}` },
    { name: 'models/ + raw id', prefix: `/genai/v1beta/models/${id}` },
    { name: 'raw id, no models/', prefix: `/genai/v1beta/${id}` },
    { name: 'encoded id, no models/', prefix: `/genai/v1beta/${encodeURIComponent(id)}` }
  ]
}

interface Action {
  action: string
  model: string
  /** Upstream path the catalogue names for this action and model. */
  upstream: string
  body: unknown
  query?: string
}

const ACTIONS: readonly Action[] = [
  { action: 'generateContent', model: 'genai/gemini-2.5-flash', upstream: '/v1beta/models/gemini-2.5-flash:generateContent', body: { contents: [{ role: 'user', parts: [{ text: 'both shapes' }] }] } },
  { action: 'streamGenerateContent', model: 'genai/gemini-2.5-flash', upstream: '/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse', query: '?alt=sse', body: { contents: [{ role: 'user', parts: [{ text: 'stream both' }] }] } },
  { action: 'generateImages', model: 'genai/imagen-4', upstream: '/v1beta/models/imagen-4.0-generate-001:predict', body: { instances: [{ prompt: 'a dot' }], parameters: { sampleCount: 1 } } },
  // `:predict` is the provider's own name for image generation, what the AI SDK and the genai SDK call.
  { action: 'predict', model: 'genai/imagen-4', upstream: '/v1beta/models/imagen-4.0-generate-001:predict', body: { instances: [{ prompt: 'a dot' }], parameters: { sampleCount: 1 } } },
  { action: 'editImage', model: 'genai/imagen-4', upstream: '/v1beta/models/imagen-4.0-generate-001:editImage', body: { instances: [{ prompt: 'red', referenceImages: [] }] } },
  { action: 'upscaleImage', model: 'genai/imagen-4', upstream: '/v1beta/models/imagen-4.0-generate-001:upscaleImage', body: { instances: [{ prompt: '' }], parameters: { upscaleConfig: { upscaleFactor: 'x2' } } } },
  { action: 'generateVideos', model: 'genai/veo-3', upstream: '/v1beta/models/veo-3.0-generate-001:predictLongRunning', body: { instances: [{ prompt: 'a coast' }] } },
  // The provider's own name for video generation, what the genai SDK's generateVideos calls.
  { action: 'predictLongRunning', model: 'genai/veo-3', upstream: '/v1beta/models/veo-3.0-generate-001:predictLongRunning', body: { instances: [{ prompt: 'a coast' }] } }
]

interface Answer {
  status: number
  requestId: string
  /** The body with the occurrence's request id blanked, so two refusals compare equal. */
  body: string
  call: RecordedCall | undefined
}

async function post (gw: TestGateway, path: string, body: unknown): Promise<Answer> {
  const calls = gw.mock.calls.length
  const res = await fetch(gw.url + path, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-goog-api-key': gw.key },
    body: JSON.stringify(body)
  })
  const text = await res.text()
  const requestId = res.headers.get('x-request-id') ?? ''
  if (gw.mock.calls.length > calls + 1) throw new Error(`one request made ${gw.mock.calls.length - calls} upstream calls`)
  return { status: res.status, requestId, body: text.split(requestId).join('<request id>'), call: gw.mock.calls[calls] }
}

function errorStatus (a: Answer): string | undefined {
  return (JSON.parse(a.body) as { error?: { status?: string } }).error?.status
}

async function pathsOn (t: Test, backend: Backend): Promise<void> {
  // veo-3 is paused in the default catalogue; this copy makes it active so its action is served.
  const cfg = writeTestConfig((c) => { modelOf(c, 'genai/veo-3').status = 'active' })
  t.teardown(cfg.remove)
  const gw = await startTestGateway({ backend, configFile: cfg.file })
  t.teardown(() => gw.close())

  for (const a of ACTIONS) {
    t.test(`:${a.action} is served the same in every shape`, async (t) => {
      const routes = new Set<string>()
      for (const s of shapes(a.model)) {
        const answer = await post(gw, `${s.prefix}:${a.action}${a.query ?? ''}`, a.body)
        t.equal(answer.status, 200, `${s.name}: 200`)
        t.equal(answer.call?.path, a.upstream, `${s.name}: provider path from the catalogue`)
        t.equal(answer.call?.body.toString(), JSON.stringify(a.body), `${s.name}: body forwarded untouched`)
        const row = await settledRow(gw, answer.requestId)
        t.equal(row.requestedModel, a.model, `${s.name}: request log names the model`)
        t.equal(row.stream, a.action === 'streamGenerateContent', `${s.name}: request log stream flag (the route streams, the body has no \`stream\`)`)
        routes.add(row.route)
      }
      t.equal(routes.size, 1, 'every shape is the one declared route in the request log')
    })
  }

  t.test('a model id not in the catalogue is refused the same in every shape, and never sent', async (t) => {
    for (const a of ACTIONS) {
      const answers = await Promise.all(shapes('genai/no-such-model').map(async (s) => ({ s, answer: await post(gw, `${s.prefix}:${a.action}`, a.body) })))
      const first = answers[0]?.answer
      t.equal(first?.status, 404, `:${a.action}: 404`)
      t.equal(first === undefined ? undefined : errorStatus(first), 'MODEL_NOT_FOUND', `:${a.action}: MODEL_NOT_FOUND in the genai envelope`)
      for (const { s, answer } of answers) {
        t.equal(answer.status, first?.status, `:${a.action} ${s.name}: same status`)
        t.equal(answer.body, first?.body, `:${a.action} ${s.name}: same body`)
        t.equal(answer.call, undefined, `:${a.action} ${s.name}: no upstream call`)
      }
    }
  })

  // gemini-2.5-flash is a shipped alias of the genai family; gemini-1.5-pro is neither an id nor an alias.
  t.test('an id without a provider prefix that no alias names is not in the catalogue either', async (t) => {
    const viaModels = await post(gw, '/genai/v1beta/models/gemini-1.5-pro:generateContent', {})
    const bare = await post(gw, '/genai/v1beta/gemini-1.5-pro:generateContent', {})
    t.equal(errorStatus(viaModels), 'MODEL_NOT_FOUND')
    t.equal(bare.body, viaModels.body, 'same refusal')
    t.equal(bare.call, undefined, 'no upstream call')
  })

  t.test('a model without the action is refused the same in every shape', async (t) => {
    const answers = await Promise.all(shapes('genai/gemini-2.5-flash').map(async (s) => await post(gw, `${s.prefix}:generateImages`, {})))
    for (const answer of answers) {
      t.equal(errorStatus(answer), 'MODEL_PROTOCOL_UNSUPPORTED')
      t.equal(answer.body, answers[0]?.body, 'same body')
      t.equal(answer.call, undefined, 'no upstream call')
    }
  })

  t.test('an action no route declares is an unknown route in every shape', async (t) => {
    for (const s of shapes('genai/gemini-2.5-flash')) {
      const answer = await post(gw, `${s.prefix}:countTokens`, {})
      t.equal(answer.status, 404, s.name)
      t.equal(errorStatus(answer), 'REQUEST_ROUTE_NOT_FOUND', s.name)
    }
    const noAction = await post(gw, '/genai/v1beta/genai/gemini-2.5-flash', {})
    t.equal(errorStatus(noAction), 'REQUEST_ROUTE_NOT_FOUND', 'a path with no action')
  })

  t.test('an empty model segment asks for a model in either shape', async (t) => {
    for (const path of ['/genai/v1beta/models/:generateContent', '/genai/v1beta/:generateContent']) {
      const answer = await post(gw, path, {})
      t.equal(answer.status, 400, path)
      t.equal(errorStatus(answer), 'REQUEST_MODEL_REQUIRED', path)
    }
  })
}

for (const backend of ['sqlite', 'pg'] as const) {
  t.test(`generative-content paths (${backend})`, async (t) => { await pathsOn(t, backend) })
}
