// Billable parameters are checked before the hold: a max-tokens or count parameter that is not a
// positive safe integer is REQUEST_INVALID, one above the model's declared range is
// MODEL_PARAMETER_UNSUPPORTED; either way in the envelope of the family called, with the upstream
// never called and the wallet untouched. Regression for "images n: 1e23 or 2.5 held as 1 and
// forwarded (the mock served 10, billed 1); max_tokens -5 or '100' forwarded".
import t, { type Test } from 'tap'
import Anthropic from '@anthropic-ai/sdk'
import { ApiError, GoogleGenAI } from '@google/genai'
import { OpenAI } from 'openai'
import { isGatewayError } from '../plugins/foundation/errors/index.js'
import { checkBillableParameters, type ParameterRange } from '../plugins/foundation/operations/index.js'
import { ledgerState, settledRow } from './helpers/billing.js'
import { startTestGateway } from './helpers/gateway.js'
import { opOf } from './helpers/operations.js'
import { multipartBody } from './helpers/wire.js'
import type { ParsedBody } from '../plugins/foundation/shapes/index.js'

// ---------------------------------------------------------------------------------------------
// The pure check

const json = (body: Record<string, unknown>): ParsedBody => ({ kind: 'json', raw: Buffer.from(JSON.stringify(body)), json: body })
/** A real form of these plain fields, with busboy's reading of it (the check finds each bound field's part). */
function form (fields: Record<string, string>): ParsedBody {
  const { body, contentType } = multipartBody(Object.entries(fields).map(([name, value]) => ({ name, value })), 'b')
  return { kind: 'multipart', raw: body, contentType, summary: { boundary: 'b', fields, files: [] } }
}
const RANGE: ParameterRange = { maxOutputTokens: 1000, maxImages: 10 }

/** The code and param the check throws, or 'ok'. */
function verdict (op: string, body: ParsedBody | undefined, range: ParameterRange = RANGE): string {
  try {
    checkBillableParameters(opOf(op), range, body)
    return 'ok'
  } catch (err) {
    if (!isGatewayError(err)) throw err
    return `${err.code} ${err.details.param ?? ''}`
  }
}

t.test('not a positive safe integer: REQUEST_INVALID naming the parameter', async (t) => {
  for (const bad of ['100', 2.5, 1e23, 2 ** 53, -5, 0, true, {}, [3]]) {
    t.equal(verdict('chat.completions', json({ max_tokens: bad })), 'REQUEST_INVALID max_tokens', `max_tokens ${JSON.stringify(bad)}`)
    t.equal(verdict('images.generations', json({ n: bad })), 'REQUEST_INVALID n', `images n ${JSON.stringify(bad)}`)
  }
  t.equal(verdict('genai.generateContent', json({ generationConfig: { maxOutputTokens: -1 } })), 'REQUEST_INVALID generationConfig.maxOutputTokens')
  t.equal(verdict('genai.generateContent', json({ generation_config: { candidate_count: 1.5 } })), 'REQUEST_INVALID generation_config.candidate_count')
  t.equal(verdict('genai.generateImages', json({ parameters: { sampleCount: '4' } })), 'REQUEST_INVALID parameters.sampleCount')
  t.equal(verdict('responses', json({ max_output_tokens: 'lots' })), 'REQUEST_INVALID max_output_tokens')
  for (const bad of ['2.5', '-1', '0', '1e3', ' 2', 'two', '99999999999999999']) {
    t.equal(verdict('images.edits', form({ n: bad })), 'REQUEST_INVALID n', `multipart n "${bad}"`)
  }
})

t.test('above the model\'s declared range: MODEL_PARAMETER_UNSUPPORTED', async (t) => {
  t.equal(verdict('chat.completions', json({ max_completion_tokens: 1001 })), 'MODEL_PARAMETER_UNSUPPORTED max_completion_tokens')
  t.equal(verdict('messages', json({ max_tokens: 1001 })), 'MODEL_PARAMETER_UNSUPPORTED max_tokens')
  t.equal(verdict('genai.streamGenerateContent', json({ generationConfig: { maxOutputTokens: 5000 } })), 'MODEL_PARAMETER_UNSUPPORTED generationConfig.maxOutputTokens')
  t.equal(verdict('images.generations', json({ n: 11 })), 'MODEL_PARAMETER_UNSUPPORTED n')
  t.equal(verdict('images.edits', form({ n: '11' })), 'MODEL_PARAMETER_UNSUPPORTED n', 'multipart field')
  t.equal(verdict('genai.generateImages', json({ parameters: { sampleCount: 3 } }), { maxOutputTokens: undefined, maxImages: 2 }), 'MODEL_PARAMETER_UNSUPPORTED parameters.sampleCount', 'a per-model max_images')
})

t.test('in range, absent or null: accepted', async (t) => {
  t.equal(verdict('chat.completions', json({ max_tokens: 1000, max_completion_tokens: 1, n: 128 })), 'ok', 'chat n has no declared maximum')
  t.equal(verdict('chat.completions', json({ max_tokens: null, n: null })), 'ok', 'null is the upstream default')
  t.equal(verdict('chat.completions', json({ max_tokens: 10 ** 9 }), { maxOutputTokens: undefined, maxImages: 10 }), 'ok', 'no declared max_output_tokens: any positive integer')
  t.equal(verdict('images.generations', json({ n: 10 })), 'ok')
  t.equal(verdict('images.edits', form({ n: '3', prompt: 'x' })), 'ok')
  t.equal(verdict('messages', undefined), 'ok', 'no body')
  t.equal(verdict('chat.completions', json({ max_output_tokens: 'x', generationConfig: { maxOutputTokens: -1 } })), 'ok', 'another family\'s parameters are not this operation\'s and pass untouched')
  t.equal(verdict('audio.speech', json({ n: 2.5, max_tokens: '100' })), 'ok', 'speech has no bound parameters')
})

// ---------------------------------------------------------------------------------------------
// Through the running gateway

const gw = await startTestGateway({ credit: '50.00' })
t.teardown(() => gw.close())

interface Case {
  name: string
  path: string
  /** The raw JSON text sent: `1e23` must reach the gateway as written. */
  body: string
  headers?: Record<string, string>
  code: 'REQUEST_INVALID' | 'MODEL_PARAMETER_UNSUPPORTED'
  param: string
}

const IMAGES = '/v1/images/generations'
const CHAT = '/v1/chat/completions'
const MESSAGES = '/v1/messages'
const GENAI = '/genai/v1beta/models/genai%2Fgemini-2.5-flash:generateContent'
const IMAGEN = '/genai/v1beta/models/genai%2Fimagen-4:generateImages'
const chatBody = (extra: string): string => `{"model":"openai/gpt-4o-mini","messages":[{"role":"user","content":"hi"}],${extra}}`
const messagesBody = (extra: string): string => `{"model":"anthropic/claude-haiku-3.5","messages":[{"role":"user","content":"hi"}],${extra}}`
const genaiBody = (config: string): string => `{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"generationConfig":{${config}}}`
const anthropicKey = (): Record<string, string> => ({ 'x-api-key': gw.key })
const genaiKey = (): Record<string, string> => ({ 'x-genai-api-key': gw.key })

const CASES: Case[] = [
  { name: 'images n: 1e23', path: IMAGES, body: '{"model":"openai/gpt-image-1","prompt":"a cat","n":1e23}', code: 'REQUEST_INVALID', param: 'n' },
  { name: 'images n: 2.5', path: IMAGES, body: '{"model":"openai/gpt-image-1","prompt":"a cat","n":2.5}', code: 'REQUEST_INVALID', param: 'n' },
  { name: 'images n: 11 (max_images 10)', path: IMAGES, body: '{"model":"openai/gpt-image-1","prompt":"a cat","n":11}', code: 'MODEL_PARAMETER_UNSUPPORTED', param: 'n' },
  { name: 'chat max_tokens: -5', path: CHAT, body: chatBody('"max_tokens":-5'), code: 'REQUEST_INVALID', param: 'max_tokens' },
  { name: 'chat max_tokens: "100"', path: CHAT, body: chatBody('"max_tokens":"100"'), code: 'REQUEST_INVALID', param: 'max_tokens' },
  { name: 'chat n: 2.5', path: CHAT, body: chatBody('"n":2.5'), code: 'REQUEST_INVALID', param: 'n' },
  { name: 'chat max_completion_tokens above 16384', path: CHAT, body: chatBody('"max_completion_tokens":16385'), code: 'MODEL_PARAMETER_UNSUPPORTED', param: 'max_completion_tokens' },
  { name: 'messages max_tokens: -5', path: MESSAGES, body: messagesBody('"max_tokens":-5'), headers: anthropicKey(), code: 'REQUEST_INVALID', param: 'max_tokens' },
  { name: 'messages max_tokens: "100"', path: MESSAGES, body: messagesBody('"max_tokens":"100"'), headers: anthropicKey(), code: 'REQUEST_INVALID', param: 'max_tokens' },
  { name: 'genai maxOutputTokens: -5', path: GENAI, body: genaiBody('"maxOutputTokens":-5'), headers: genaiKey(), code: 'REQUEST_INVALID', param: 'generationConfig.maxOutputTokens' },
  { name: 'genai maxOutputTokens: "100"', path: GENAI, body: genaiBody('"maxOutputTokens":"100"'), headers: genaiKey(), code: 'REQUEST_INVALID', param: 'generationConfig.maxOutputTokens' },
  { name: 'genai candidateCount: 2.5', path: GENAI, body: genaiBody('"candidateCount":2.5'), headers: genaiKey(), code: 'REQUEST_INVALID', param: 'generationConfig.candidateCount' },
  { name: 'genai maxOutputTokens above 65536', path: GENAI, body: genaiBody('"maxOutputTokens":65537'), headers: genaiKey(), code: 'MODEL_PARAMETER_UNSUPPORTED', param: 'generationConfig.maxOutputTokens' },
  { name: 'imagen sampleCount: 1e23', path: IMAGEN, body: '{"instances":[{"prompt":"a cat"}],"parameters":{"sampleCount":1e23}}', headers: genaiKey(), code: 'REQUEST_INVALID', param: 'parameters.sampleCount' },
  { name: 'imagen sampleCount: 11', path: IMAGEN, body: '{"instances":[{"prompt":"a cat"}],"parameters":{"sampleCount":11}}', headers: genaiKey(), code: 'MODEL_PARAMETER_UNSUPPORTED', param: 'parameters.sampleCount' }
]

async function send (path: string, body: string | FormData, headers: Record<string, string> = gw.auth): Promise<Response> {
  return await fetch(gw.url + path, {
    method: 'POST',
    headers: typeof body === 'string' ? { 'content-type': 'application/json', ...headers } : headers,
    body
  })
}

/** The envelope of the family called carries the code and names the parameter where it can. */
function assertEnvelope (t: Test, path: string, json: Record<string, unknown>, c: { code: string, param: string }): void {
  const error = json.error as Record<string, unknown>
  if (path.startsWith('/genai/')) {
    t.equal(error.status, c.code, 'genai envelope: error.status')
    t.equal(error.code, 400, 'genai envelope: error.code is the HTTP status')
    t.match(error.message, c.param, 'the message names the parameter')
  } else if (path === MESSAGES) {
    t.equal(json.type, 'error', 'messages envelope')
    t.equal(error.code, c.code)
    t.match(error.message, c.param, 'the message names the parameter')
  } else {
    t.equal(error.code, c.code)
    t.equal(error.param, c.param, 'chat envelope: param')
  }
}

t.test('malformed or out-of-range parameters are refused before the hold, per family', async (t) => {
  for (const c of CASES) {
    t.test(c.name, async (t) => {
      gw.mock.reset()
      const before = await ledgerState(gw)
      const res = await send(c.path, c.body, c.headers)
      t.equal(res.status, 400, 'HTTP 400')
      t.equal(res.headers.get('x-gateway-error-code'), c.code)
      t.equal(res.headers.get('x-gateway-billed'), 'false')
      assertEnvelope(t, c.path, await res.json() as Record<string, unknown>, c)
      t.equal(gw.mock.calls.length, 0, 'the upstream was never called')
      const row = await settledRow(gw, res.headers.get('x-request-id') ?? '')
      t.match(row, { outcome: 'refused', errorCode: c.code, billingStatus: 'NOT_BILLED', holdId: null, cost: null })
      const after = await ledgerState(gw)
      t.equal(after.balance, before.balance, 'wallet unchanged')
      t.equal(after.charges.length, before.charges.length, 'no charge')
      t.equal(after.openHolds, 0, 'no hold')
    })
  }
})

t.test('multipart image edits: the form field n is checked too', async (t) => {
  for (const [n, code] of [['2.5', 'REQUEST_INVALID'], ['11', 'MODEL_PARAMETER_UNSUPPORTED']] as const) {
    gw.mock.reset()
    const fd = new FormData()
    fd.append('model', 'openai/gpt-image-1-edit')
    fd.append('prompt', 'add a hat')
    fd.append('n', n)
    fd.append('image', new Blob([Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex')], { type: 'image/png' }), 'cat.png')
    const before = await ledgerState(gw)
    const res = await send('/v1/images/edits', fd)
    t.equal(res.status, 400, `n=${n}`)
    t.equal(res.headers.get('x-gateway-error-code'), code, `n=${n}`)
    t.equal(gw.mock.calls.length, 0, `n=${n}: the upstream was never called`)
    t.equal((await ledgerState(gw)).balance, before.balance, `n=${n}: wallet unchanged`)
  }
})

t.test('valid values still pass, and are billed as asked', async (t) => {
  const ok: Array<[string, string, Record<string, string>]> = [
    [IMAGES, '{"model":"openai/gpt-image-1","prompt":"a cat","n":2}', gw.auth],
    [CHAT, chatBody('"max_tokens":100,"n":1'), gw.auth],
    [CHAT, chatBody('"max_completion_tokens":16384,"max_tokens":null'), gw.auth],
    [MESSAGES, messagesBody('"max_tokens":8192'), anthropicKey()],
    [GENAI, genaiBody('"maxOutputTokens":100,"candidateCount":1'), genaiKey()],
    [IMAGEN, '{"instances":[{"prompt":"a cat"}],"parameters":{"sampleCount":10}}', genaiKey()]
  ]
  for (const [path, body, headers] of ok) {
    gw.mock.reset()
    const res = await send(path, body, headers)
    t.equal(res.status, 200, `${path} ${body}`)
    t.equal(gw.mock.calls.length, 1, 'forwarded once')
    const row = await settledRow(gw, res.headers.get('x-request-id') ?? '')
    t.equal(row.billingStatus, 'BILLED', 'billed')
  }
  gw.mock.reset()
  const res = await send(IMAGES, '{"model":"openai/gpt-image-1","prompt":"a cat","n":3}')
  const row = await settledRow(gw, res.headers.get('x-request-id') ?? '')
  t.equal(row.usage?.images, 3, 'three images asked, three served and billed')
})

t.test('a model operation declared cap_output_tokens takes a max_tokens above its range and forwards it lowered', async (t) => {
  gw.mock.reset()
  const res = await send(MESSAGES, messagesBody('"max_tokens":8193'), anthropicKey())
  t.equal(res.status, 200, 'claude-haiku-3.5 declares cap_output_tokens: not MODEL_PARAMETER_UNSUPPORTED')
  t.match(gw.mock.calls[0]?.json, { max_tokens: 8192 }, "lowered to the model's max_output_tokens before forwarding")
  const bad = await send(MESSAGES, messagesBody('"max_tokens":"9000"'), anthropicKey())
  t.equal(bad.status, 400, 'a value that is not a positive integer is still refused')
  t.equal(bad.headers.get('x-gateway-error-code'), 'REQUEST_INVALID')
})

t.test('the SDKs surface the refusal as their own API error with our code', async (t) => {
  gw.mock.reset()
  const openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: gw.key, maxRetries: 0 })
  const imageErr = await openai.images.generate({ model: 'openai/gpt-image-1', prompt: 'a cat', n: 2.5 }).catch((e: unknown) => e)
  t.ok(imageErr instanceof OpenAI.BadRequestError, 'OpenAI BadRequestError')
  if (imageErr instanceof OpenAI.APIError) {
    t.equal(imageErr.code, 'REQUEST_INVALID')
    t.equal(imageErr.param, 'n')
  }

  const anthropic = new Anthropic({ baseURL: gw.url, apiKey: gw.key, maxRetries: 0 })
  const msgErr = await anthropic.messages.create({ model: 'anthropic/claude-haiku-3.5', max_tokens: -5, messages: [{ role: 'user', content: 'hi' }] }).catch((e: unknown) => e)
  t.ok(msgErr instanceof Anthropic.BadRequestError, 'Anthropic BadRequestError')
  if (msgErr instanceof Anthropic.APIError) t.match(JSON.stringify(msgErr.error), /REQUEST_INVALID/)

  const genai = new GoogleGenAI({ apiKey: gw.key, httpOptions: { baseUrl: `${gw.url}/genai`, headers: { 'x-genai-api-key': gw.key }, retryOptions: { attempts: 1 } } })
  const genErr = await genai.models.generateContent({ model: 'genai/gemini-2.5-flash', contents: 'hi', config: { maxOutputTokens: 70000 } }).catch((e: unknown) => e)
  t.ok(genErr instanceof ApiError, 'GenAI ApiError')
  if (genErr instanceof ApiError) {
    t.equal(genErr.status, 400)
    t.match(genErr.message, /MODEL_PARAMETER_UNSUPPORTED/)
  }
  t.equal(gw.mock.calls.length, 0, 'none of them reached the upstream')
})
