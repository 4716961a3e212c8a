// The gateway has no file-upload route, so every file a tenant names by its id (chat
// `file.file_id`, responses `input_file` / `input_image` `file_id`, a Messages `source` of type
// `file`, a GenAI `fileData.fileUri` naming the Files API) is a file of the operator's one
// provider account: the operator's own, or another account's. It was forwarded for any id (held
// at the context window, never checked for its owner). A file reference is now a declared feature
// (`file_reference`), refused by default with MODEL_PARAMETER_UNSUPPORTED naming the field, and
// allowed per model by configuration (then held at the context window). A GenAI fileData with a
// plain https, gs:// or YouTube URI stays media the provider fetches. Through the official SDKs
// where they send the field, raw JSON for the nested and hostile spellings, on both stores.
import Anthropic from '@anthropic-ai/sdk'
import { GoogleGenAI } from '@google/genai'
import { OpenAI } from 'openai'
import t, { type Test } from 'tap'
import { ledgerState, priceOf, settledRow } from './helpers/billing.js'
import { startTestGateway, type Backend, type TestGateway } from './helpers/gateway.js'
import { modelOf, readRepoConfig, writeTestConfig } from './helpers/test-config.js'
import { refusalCode } from './helpers/wallet-bound.js'

interface Refused { code: string | undefined, param: string | undefined, message: string }

/** The code, `param` (chat envelope) and message of a refused SDK call, or of a raw answer's envelope. */
function refusal (err: unknown): Refused {
  const e = err as { error?: { param?: string, error?: { message?: string } }, message?: string } | null
  return { code: refusalCode(err), param: e?.error?.param ?? undefined, message: String(e?.error?.error?.message ?? e?.message ?? '') }
}

async function raw (gw: TestGateway, path: string, body: unknown): Promise<{ status: number, json: any, headers: Headers }> {
  const res = await fetch(gw.url + path, { method: 'POST', headers: { 'content-type': 'application/json', ...gw.auth }, body: JSON.stringify(body) })
  return { status: res.status, json: await res.json(), headers: res.headers }
}

/** A raw refusal: 400 MODEL_PARAMETER_UNSUPPORTED naming `param`, nothing forwarded, nothing held. */
async function refusedRaw (t: Test, gw: TestGateway, path: string, body: unknown, param: string): Promise<void> {
  const calls = gw.mock.calls.length
  const a = await raw(gw, path, body)
  t.equal(a.status, 400, `${param}: 400`)
  t.equal(a.headers.get('x-gateway-error-code'), 'MODEL_PARAMETER_UNSUPPORTED', `${param}: MODEL_PARAMETER_UNSUPPORTED`)
  t.equal(a.headers.get('x-gateway-billed'), 'false', `${param}: not billed`)
  const text = JSON.stringify(a.json)
  if (a.json?.error?.param !== undefined) t.equal(a.json.error.param, param, `${param}: param names the field`)
  else t.ok(text.includes(param), `${param}: the message names the field`)
  t.equal(gw.mock.calls.length, calls, `${param}: nothing reached the provider`)
}

const CHAT = '/v1/chat/completions'
const RESPONSES = '/v1/responses'
const MESSAGES = '/v1/messages'
const GENERATE = '/genai/v1beta/models/genai%2Fgemini-2.5-flash:generateContent'
const mini = 'openai/gpt-4o-mini'
const haiku = 'anthropic/claude-haiku-3.5'

for (const backend of ['sqlite', 'pg'] as Backend[]) {
  t.test(`a stored file named by its id is refused, naming the field (${backend})`, async (t) => {
    const gw = await startTestGateway({ backend, credit: '10.00' })
    t.teardown(() => gw.close())
    const openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: gw.key, maxRetries: 0 })
    const anthropic = new Anthropic({ baseURL: gw.url, apiKey: gw.key, maxRetries: 0 })
    const genai = new GoogleGenAI({ apiKey: gw.key, httpOptions: { baseUrl: `${gw.url}/genai`, headers: { 'x-genai-api-key': gw.key }, retryOptions: { attempts: 1 } } })
    const before = await ledgerState(gw)

    const sdkCases: Array<{ name: string, param: string, call: () => Promise<unknown> }> = [
      {
        name: 'chat file part',
        param: 'messages[0].content[1].file.file_id',
        call: async () => await openai.chat.completions.create({ model: mini, max_tokens: 16, messages: [{ role: 'user', content: [{ type: 'text', text: 'summarise' }, { type: 'file', file: { file_id: 'file-of-another-account' } }] }] })
      },
      {
        name: 'responses input_file',
        param: 'input[0].content[0].file_id',
        call: async () => await openai.responses.create({ model: mini, max_output_tokens: 16, input: [{ role: 'user', content: [{ type: 'input_file', file_id: 'file-of-another-account' }, { type: 'input_text', text: 'summarise' }] }] })
      },
      {
        name: 'responses input_image',
        param: 'input[0].content[1].file_id',
        call: async () => await openai.responses.create({ model: mini, max_output_tokens: 16, input: [{ role: 'user', content: [{ type: 'input_text', text: 'describe' }, { type: 'input_image', file_id: 'file-of-another-account', detail: 'auto' }] }] })
      },
      {
        name: 'messages document source file',
        param: 'messages[0].content[0].source.file_id',
        call: async () => await anthropic.messages.create({ model: haiku, max_tokens: 16, messages: [{ role: 'user', content: [{ type: 'document', source: { type: 'file', file_id: 'file_of_another_account' } } as never, { type: 'text', text: 'summarise' }] }] })
      },
      {
        name: 'GenAI fileData naming the Files API (as the SDK sends a file.uri)',
        param: 'contents[0].parts[1].fileData.fileUri',
        call: async () => await genai.models.generateContent({ model: 'genai/gemini-2.5-flash', contents: [{ role: 'user', parts: [{ text: 'describe' }, { fileData: { fileUri: 'https://generativelanguage.googleapis.com/v1beta/files/abc123', mimeType: 'application/pdf' } }] }] })
      }
    ]
    for (const c of sdkCases) {
      const calls = gw.mock.calls.length
      const err = await c.call().then(() => null, (e: unknown) => e)
      const r = refusal(err)
      t.equal(r.code, 'MODEL_PARAMETER_UNSUPPORTED', `${c.name}: refused`)
      if (r.param !== undefined) t.equal(r.param, c.param, `${c.name}: param names the field`)
      else t.match(r.message, c.param, `${c.name}: the message names the field`)
      t.equal(gw.mock.calls.length, calls, `${c.name}: nothing reached the provider`)
    }

    // Nested places, aliases and the other spelling, as a hostile tenant writes them.
    const text = { type: 'text', text: 'x' }
    await refusedRaw(t, gw, MESSAGES, { model: haiku, max_tokens: 16, messages: [{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: [text, { type: 'image', source: { type: 'file', file_id: 'f' } }] }] }] }, 'messages[0].content[0].content[1].source.file_id')
    await refusedRaw(t, gw, MESSAGES, { model: haiku, max_tokens: 16, messages: [{ role: 'user', content: [{ type: 'document', source: { type: 'content', content: [{ type: 'image', source: { type: 'file', file_id: 'f' } }] } }] }] }, 'messages[0].content[0].source.content[0].source.file_id')
    await refusedRaw(t, gw, MESSAGES, { model: haiku, max_tokens: 16, messages: [{ role: 'user', content: [text, { type: 'container_upload', file_id: 'f' }] }] }, 'messages[0].content[1].file_id')
    await refusedRaw(t, gw, RESPONSES, { model: mini, input: [{ type: 'function_call_output', call_id: 'c', output: [{ type: 'input_file', file_id: 'f' }] }] }, 'input[0].output[0].file_id')
    await refusedRaw(t, gw, RESPONSES, { model: mini, input: [{ type: 'input_image', file_id: 'f' }] }, 'input[0].file_id')
    await refusedRaw(t, gw, RESPONSES, { model: mini, input: [{ type: 'computer_call_output', call_id: 'c', output: { type: 'computer_screenshot', file_id: 'f' } }] }, 'input[0].output.file_id')
    // A URL beside the id does not hide it: the provider may read either.
    await refusedRaw(t, gw, RESPONSES, { model: mini, input: [{ role: 'user', content: [{ type: 'input_image', image_url: 'https://example.com/a.png', file_id: 'f' }] }] }, 'input[0].content[0].file_id')
    await refusedRaw(t, gw, CHAT, { model: mini, messages: [{ role: 'user', content: [{ type: 'file', file: { file_data: 'data:application/pdf;base64,AAAA', file_id: 'f' } }] }] }, 'messages[0].content[0].file.file_id')
    // Inside tools: a code interpreter container mounting stored files, an image generation mask.
    await refusedRaw(t, gw, RESPONSES, { model: 'openai/gpt-4o', input: 'run', tools: [{ type: 'code_interpreter', container: { type: 'auto', file_ids: ['file-of-another-account'] } }] }, 'tools[0].container.file_ids')
    await refusedRaw(t, gw, RESPONSES, { model: 'openai/gpt-4o', input: 'draw', tools: [{ type: 'image_generation', input_image_mask: { file_id: 'f' } }] }, 'tools[0].input_image_mask.file_id')
    // GenAI: snake_case, mixed case, the bare name, a Files API host in any case or disguise,
    // the system instruction, a function response's parts.
    const gen = (part: unknown): unknown => ({ contents: [{ role: 'user', parts: [{ text: 'x' }, part] }] })
    await refusedRaw(t, gw, GENERATE, gen({ file_data: { file_uri: 'files/abc', mime_type: 'application/pdf' } }), 'contents[0].parts[1].file_data.file_uri')
    await refusedRaw(t, gw, GENERATE, gen({ fileData: { file_uri: 'files/abc' } }), 'contents[0].parts[1].fileData.file_uri')
    await refusedRaw(t, gw, GENERATE, gen({ file_data: { fileUri: ' files/abc' } }), 'contents[0].parts[1].file_data.fileUri')
    await refusedRaw(t, gw, GENERATE, gen({ fileData: { fileUri: 'HTTPS://GenerativeLanguage.GoogleAPIs.com./v1beta/files/abc' } }), 'contents[0].parts[1].fileData.fileUri')
    await refusedRaw(t, gw, GENERATE, gen({ fileData: { fileUri: 'https://evil.example@generativelanguage.googleapis.com\\v1beta\\files\\abc' } }), 'contents[0].parts[1].fileData.fileUri')
    // Both spellings at once: the harmless one does not hide the other.
    await refusedRaw(t, gw, GENERATE, gen({ fileData: { fileUri: 'https://example.com/a.pdf' }, file_data: { file_uri: 'files/abc' } }), 'contents[0].parts[1].file_data.file_uri')
    await refusedRaw(t, gw, GENERATE, { contents: [{ role: 'user', parts: [{ text: 'x' }] }], systemInstruction: { parts: [{ fileData: { fileUri: 'files/abc' } }] } }, 'systemInstruction.parts[0].fileData.fileUri')
    await refusedRaw(t, gw, GENERATE, { contents: [{ role: 'user', parts: [{ functionResponse: { name: 'f', response: {}, parts: [{ fileData: { fileUri: 'files/abc' } }] } }] }] }, 'contents[0].parts[0].functionResponse.parts[0].fileData.fileUri')
    // Image edits by JSON, a Veo video to extend.
    await refusedRaw(t, gw, '/v1/images/edits', { model: 'openai/gpt-image-1-edit', prompt: 'x', n: 1, images: [{ file_id: 'file-of-another-account' }] }, 'images[0].file_id')
    await refusedRaw(t, gw, '/v1/images/edits', { model: 'openai/gpt-image-1-edit', prompt: 'x', n: 1, images: [{ image_url: 'https://example.com/a.png' }], mask: { file_id: 'f' } }, 'mask.file_id')
    await refusedRaw(t, gw, '/genai/v1beta/models/genai%2Fveo-3:predictLongRunning', { instances: [{ prompt: 'extend', video: { uri: 'https://generativelanguage.googleapis.com/v1beta/files/vid:download?alt=media' } }] }, 'instances[0].video.uri')

    const after = await ledgerState(gw)
    t.equal(after.balance, before.balance, 'nothing billed')
    t.equal(after.openHolds, 0, 'nothing held')

    // Media the provider fetches stays URL media (held at the context window), not a refusal.
    for (const uri of ['https://example.com/a.pdf', 'gs://bucket/a.pdf', 'https://www.youtube.com/watch?v=abc', 'https://storage.googleapis.com/b/a.pdf']) {
      const a = await raw(gw, GENERATE, gen({ fileData: { fileUri: uri, mimeType: 'application/pdf' } }))
      t.equal(a.status, 200, `${uri}: served`)
    }
    // A schema property or a text that says file_id is text.
    const plain = await raw(gw, CHAT, { model: mini, messages: [{ role: 'user', content: 'my file_id is file-abc' }], tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object', properties: { file_id: { type: 'string' } } } } }] })
    t.equal(plain.status, 200, 'text and schemas naming file_id are served')
  })
}

t.test('a model that allows file references serves them, held at its context window', async (t) => {
  const cfg = writeTestConfig((c) => {
    const m = modelOf(c, mini)
    const pricing = m.pricing as unknown as { features?: Record<string, unknown> }
    pricing.features = { ...(pricing.features ?? {}), file_reference: 'allowed' }
  })
  t.teardown(() => { cfg.remove() })
  const gw = await startTestGateway({ configFile: cfg.file, credit: '10.00' })
  t.teardown(() => gw.close())
  const openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: gw.key, maxRetries: 0 })
  const r = await openai.chat.completions.create({ model: mini, max_tokens: 16, messages: [{ role: 'user', content: [{ type: 'text', text: 'summarise' }, { type: 'file', file: { file_id: 'file-1' } }] }] }).withResponse()
  t.equal(r.response.status, 200, 'served')
  const row = await settledRow(gw, r.response.headers.get('x-request-id') ?? '')
  const price = priceOf(mini)
  const contextWindow = BigInt(modelOf(readRepoConfig(), mini).context_window ?? 0)
  t.ok(contextWindow > 0n, 'the model declares a context window')
  t.ok(row.held !== null && row.held >= contextWindow * (price.input ?? 0n) / price.per, `held ${row.held} covers the context window as input`)
  // Another model of the same config still refuses it.
  const err = await openai.chat.completions.create({ model: 'openai/gpt-4o', max_tokens: 16, messages: [{ role: 'user', content: [{ type: 'file', file: { file_id: 'file-1' } }] }] }).then(() => null, (e: unknown) => e)
  t.equal(refusal(err).code, 'MODEL_PARAMETER_UNSUPPORTED', 'a model that does not allow it refuses it')
})
