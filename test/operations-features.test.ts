// Feature detection (plugins/foundation/operations/features.ts) over the built-in operations table: which
// features a body and query use, with the uses the hold counts; the refusals that do not depend
// on the model (unknown tool types, unmeterable query values, malformed caps) and those that do
// (a feature the model does not price; uncountable input without a context window).
import t from 'tap'
import { isGatewayError } from '../plugins/foundation/errors/index.js'
import {
  compileOperationFeatures, detectFeatures, inputPasses, modelFeatureRefusal, queryPairs,
  type FeatureStance, type FeatureUse, type ModelFeatures
} from '../plugins/foundation/operations/index.js'
import { countReferencedMedia } from '../plugins/foundation/pricing/url-media.js'
import { opOf } from './helpers/operations.js'
import type { ParsedBody } from '../plugins/foundation/shapes/index.js'

const json = (body: Record<string, unknown>): ParsedBody => ({ kind: 'json', raw: Buffer.from(JSON.stringify(body)), json: body })
const featuresOf = (op: string) => opOf(op).features
const uses = (found: readonly FeatureUse[]): Record<string, { uses: number, param: string }> =>
  Object.fromEntries(found.map((f) => [f.feature.name, { uses: f.uses, param: f.param }]))

/** The catalogue error `fn` throws: its code and param. */
function thrown (fn: () => unknown): { code: string, param: unknown } | null {
  try {
    fn()
    return null
  } catch (err) {
    if (!isGatewayError(err)) throw err
    return { code: err.code, param: err.details.param }
  }
}

t.test('responses: hosted tools by tools[].type, with their uses caps', async (t) => {
  const op = featuresOf('responses')
  t.same(uses(detectFeatures(op, json({ input: 'x', tools: [{ type: 'function', name: 'f' }, { type: 'web_search' }] }), '')),
    { web_search: { uses: 10, param: 'tools[1].type' } }, 'a function tool is plain; web_search at its default of 10 uses')
  t.same(uses(detectFeatures(op, json({ tools: [{ type: 'image_generation' }, { type: 'web_search_preview' }], max_tool_calls: 3 }), '')),
    { image_generation: { uses: 3, param: 'tools[0].type' }, web_search_preview: { uses: 3, param: 'tools[1].type' } }, 'max_tool_calls caps every hosted tool')
  t.same(uses(detectFeatures(op, json({ tools: [{ type: 'code_interpreter', container: { type: 'auto' } }] }), '')),
    { code_interpreter: { uses: 10, param: 'tools[0].type' } }, 'per call, with the loop cap for its input')
  t.same(uses(detectFeatures(op, json({ input: 'x', previous_response_id: 'resp_1', service_tier: 'priority' }), '')),
    { previous_response_id: { uses: 1, param: 'previous_response_id' }, priority_tier: { uses: 1, param: 'service_tier' } }, 'parameters: present, or one of the values')
  t.same(detectFeatures(op, json({ input: 'x', service_tier: 'default', previous_response_id: null }), ''), [], 'another tier or a null parameter is nothing')
  t.same(thrown(() => detectFeatures(op, json({ tools: [{ type: 'local_shell' }] }), '')), { code: 'MODEL_PARAMETER_UNSUPPORTED', param: 'tools[0].type' }, 'an unknown tool type is refused')
  t.same(thrown(() => detectFeatures(op, json({ tools: [{ type: 'function' }, { type: 5 }] }), '')), { code: 'MODEL_PARAMETER_UNSUPPORTED', param: 'tools[1].type' }, 'a type that is not a string too')
  t.same(detectFeatures(op, json({ tools: [{ type: { nested: true } }] }), ''), [], 'an object where a value belongs marks nothing (the provider refuses it, unbilled)')
  t.same(thrown(() => detectFeatures(op, json({ tools: [{ type: 'code_interpreter', container: 'cntr_1' }] }), '')), { code: 'MODEL_PARAMETER_UNSUPPORTED', param: 'tools[0].container' }, 'a stored container, named by id, is refused')
  t.same(thrown(() => detectFeatures(op, json({ tools: [{ type: 'code_interpreter', container: { type: 'auto', memory_limit: '128g' } }] }), '')), { code: 'MODEL_PARAMETER_UNSUPPORTED', param: 'tools[0].container.memory_limit' }, 'an unknown memory tier is refused')
  t.same(uses(detectFeatures(op, json({ tools: [{ type: 'code_interpreter', container: { type: 'auto', memory_limit: '16g' } }] }), '')),
    { code_interpreter: { uses: 10, param: 'tools[0].type' }, code_interpreter_16g: { uses: 1, param: 'tools[0].container.memory_limit' } }, 'a larger tier is its own feature, on top of the container (a dotted field)')
  t.same(detectFeatures(op, json({ tools: [{ name: 'no type' }, 'not an entry', null] }), ''), [], 'entries without a type or malformed are the provider\'s to refuse')
  for (const bad of [0, -1, 2.5, '3', 1e20, true]) {
    t.same(thrown(() => detectFeatures(op, json({ tools: [{ type: 'web_search' }], max_tool_calls: bad }), '')), { code: 'REQUEST_INVALID', param: 'max_tool_calls' }, `max_tool_calls ${JSON.stringify(bad)}: REQUEST_INVALID`)
  }
})

t.test('messages: server tools by type, max_uses per tool entry', async (t) => {
  const op = featuresOf('messages')
  const search = (maxUses?: unknown): Record<string, unknown> => ({ type: 'web_search_20250305', name: 'web_search', ...(maxUses === undefined ? {} : { max_uses: maxUses }) })
  t.same(uses(detectFeatures(op, json({ tools: [{ name: 'custom tool', input_schema: {} }, search(20)] }), '')), { web_search: { uses: 20, param: 'tools[1].type' } })
  t.same(uses(detectFeatures(op, json({ tools: [search(3), search()] }), '')), { web_search: { uses: 13, param: 'tools[0].type' } }, 'two entries: their caps add up (3 + the default 10)')
  t.same(thrown(() => detectFeatures(op, json({ tools: [search(0)] }), '')), { code: 'REQUEST_INVALID', param: 'tools[0].type.max_uses' })
  t.same(thrown(() => detectFeatures(op, json({ tools: [{ type: 'bash_20250124', name: 'bash' }] }), '')), { code: 'MODEL_PARAMETER_UNSUPPORTED', param: 'tools[0].type' }, 'a client tool with a hidden system prompt is not plain')
  t.same(uses(detectFeatures(op, json({ mcp_servers: [{ url: 'https://x' }] }), '')), { mcp_servers: { uses: 1, param: 'mcp_servers' } })
})

t.test('genai: tools by key, query values', async (t) => {
  const op = featuresOf('genai.generateContent')
  t.same(uses(detectFeatures(op, json({ contents: [], tools: [{ functionDeclarations: [] }, { urlContext: {} }, { google_search: {} }] }), '')),
    { url_context: { uses: 1, param: 'tools[1].urlContext' }, google_search: { uses: 1, param: 'tools[2].google_search' } }, 'either spelling of a key')
  t.same(thrown(() => detectFeatures(op, json({ tools: [{ functionDeclarations: [], enterpriseWebSearch: {} }] }), '')), { code: 'MODEL_PARAMETER_UNSUPPORTED', param: 'tools[0].enterpriseWebSearch' }, 'every key of an entry is checked')
  t.same(uses(detectFeatures(op, json({ contents: [], cachedContent: 'cachedContents/x' }), '')), { cached_content: { uses: 1, param: 'cachedContent' } })
  t.same(detectFeatures(op, json({ contents: [] }), '?alt=json'), [], 'alt=json is meterable')
  for (const q of ['?alt=proto', '?ALT=proto', '?%61lt=proto', '?alt=json&alt=proto', '?alt=sse', '?alt=JSON', '?alt']) {
    t.same(thrown(() => detectFeatures(op, json({ contents: [] }), q)), { code: 'MODEL_PARAMETER_UNSUPPORTED', param: 'alt' }, `${q} is refused`)
  }
  t.same(detectFeatures(featuresOf('genai.streamGenerateContent'), json({ contents: [] }), '?alt=sse'), [], 'the stream takes alt=sse')
  t.same(detectFeatures(op, json({ contents: [] }), '?fields=x&key=y'), [], 'undeclared parameters are left alone here (they are not forwarded)')
  t.same(queryPairs('?a=1&&B=%32&c&%zz=1&d=%zz'), [['a', '1'], ['b', '2'], ['c', ''], ['d', '\uFFFD']], 'names decoded and lower-cased, values decoded')
})

t.test('an operation without features costs nothing: the walk never starts', async (t) => {
  for (const name of ['genai.upscaleImage', 'audio.transcriptions', 'videos.create', 'genai.generateImages']) {
    const op = featuresOf(name)
    t.equal(op.any, false, `${name} declares nothing`)
    const a = detectFeatures(op, json({ tools: [{ type: 'anything' }] }), '?alt=proto')
    t.equal(a, detectFeatures(op, undefined, ''), 'the same frozen empty answer')
  }
})

function model (stances: Record<string, FeatureStance>): ModelFeatures {
  return { contextWindow: 128_000, stance: (name) => stances[name] }
}

t.test('what a model does with the features a request uses', async (t) => {
  const op = featuresOf('responses')
  const web = detectFeatures(op, json({ tools: [{ type: 'web_search' }] }), '')
  t.equal(modelFeatureRefusal(web, model({ web_search: 'priced' })), null, 'priced: served')
  const refused = modelFeatureRefusal(web, model({ web_search: 'refused' }))
  t.match(refused, { code: 'MODEL_PARAMETER_UNSUPPORTED', details: { param: 'tools[0].type' } }, 'refused')
  t.match(modelFeatureRefusal(web, model({})), { code: 'MODEL_PARAMETER_UNSUPPORTED' }, 'not named, default refused: refused')
  t.match(modelFeatureRefusal(web, model({ web_search: 'allowed' })), { code: 'MODEL_PARAMETER_UNSUPPORTED' }, 'allowed without a price is only for features billed as tokens')
  const prev = detectFeatures(op, json({ previous_response_id: 'r' }), '')
  t.match(modelFeatureRefusal(prev, model({})), { code: 'MODEL_PARAMETER_UNSUPPORTED', details: { param: 'previous_response_id' } }, 'previous_response_id is refused by default (another account\'s stored response)')
  t.equal(modelFeatureRefusal(prev, model({ previous_response_id: 'allowed' })), null, 'a model may allow it (billed as input tokens)')
  t.match(modelFeatureRefusal(prev, { contextWindow: undefined, stance: (name) => name === 'previous_response_id' ? 'allowed' : undefined }), { code: 'MODEL_PARAMETER_UNSUPPORTED', details: { param: 'previous_response_id' } }, 'but not on a model without a context window to bound it')
})

t.test('input passes: the context window once, and once more per use of a looping tool', async (t) => {
  const op = featuresOf('responses')
  const none = { urls: 0, files: 0, inlineImages: 0, inlineUnbounded: 0 }
  t.equal(inputPasses([], none), undefined, 'nothing uncountable: the body bounds the input')
  t.equal(inputPasses([], { ...none, urls: 2 }), 1, 'media by URL: the context window')
  t.equal(inputPasses([], { ...none, files: 1 }), 1, 'a file id: the context window')
  t.equal(inputPasses([], { ...none, inlineUnbounded: 1 }), 1, 'an inline document, video or audio: the context window')
  t.equal(inputPasses([], { ...none, inlineImages: 3 }), undefined, 'inline images: their bytes and item price, not the context window')
  t.equal(inputPasses(detectFeatures(op, json({ previous_response_id: 'r' }), ''), none), 1)
  t.equal(inputPasses(detectFeatures(op, json({ tools: [{ type: 'web_search' }], max_tool_calls: 4 }), ''), none), 5, 'four searches: five passes')
  t.equal(inputPasses(detectFeatures(op, json({ tools: [{ type: 'web_search' }, { type: 'image_generation' }], max_tool_calls: 2 }), ''), none), 5, 'each looping tool adds its uses')
  t.equal(inputPasses(detectFeatures(op, json({ service_tier: 'priority' }), ''), none), undefined, 'a tier reads nothing more')
})

t.test('compile: declared features, closed lists and query values, from data only', async (t) => {
  const compiled = compileOperationFeatures({
    features: {
      pricey: { match: { list: 'extras', field: 'kind', values: ['gold', 7] }, charge: 'per_use', uses: { item_field: 'times', default: 2 }, input: 'countable' },
      mode: { match: { param: ['settings.mode'], values: ['turbo'] }, charge: 'multiplier', input: 'countable' },
      raw: { match: { query: 'format', values: ['raw'] }, charge: 'per_call', input: 'countable' }
    },
    tool_lists: [{ list: 'extras', field: 'kind', plain: ['basic'] }],
    query: { format: ['json', 'raw'] }
  })
  const body = json({ extras: [{ kind: 'basic' }, { kind: 'gold', times: 5 }, { kind: 7 }], settings: { mode: 'turbo' } })
  t.same(uses(detectFeatures(compiled, body, '?format=raw')), { pricey: { uses: 7, param: 'extras[1].kind' }, mode: { uses: 1, param: 'settings.mode' }, raw: { uses: 1, param: 'format' } })
  t.same(thrown(() => detectFeatures(compiled, json({ extras: [{ kind: 'silver' }] }), '')), { code: 'MODEL_PARAMETER_UNSUPPORTED', param: 'extras[0].kind' })
  t.same(thrown(() => detectFeatures(compiled, json({}), '?format=xml')), { code: 'MODEL_PARAMETER_UNSUPPORTED', param: 'format' })
})

t.test('media by reference: URLs and file ids of every family, in one walk', async (t) => {
  t.same(countReferencedMedia({
    messages: [
      { role: 'user', content: [{ type: 'image_url', image_url: { url: 'https://x/a.png' } }, { type: 'file', file: { file_id: 'file-1' } }, { type: 'text', text: 'hi' }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't', content: [{ type: 'document', source: { type: 'file', file_id: 'file-2' } }] }] }
    ],
    input: [{ role: 'user', content: [{ type: 'input_file', file_id: 'file-3' }, { type: 'input_image', image_url: 'https://x/b.png' }, { type: 'input_image', image_url: 'data:image/png;base64,AAAA' }] }],
    contents: [{ parts: [{ fileData: { fileUri: 'gs://b/c.pdf' } }] }]
  }), { urls: 3, files: 3, inlineImages: 1, inlineUnbounded: 0 })
  t.same(countReferencedMedia({ messages: [{ role: 'user', content: 'plain text' }] }), { urls: 0, files: 0, inlineImages: 0, inlineUnbounded: 0 })
})

t.test('images: streamed partial images are refused unless a model allows them', async (t) => {
  for (const name of ['images.generations', 'images.edits']) {
    const op = featuresOf(name)
    const partial = detectFeatures(op, json({ prompt: 'p', stream: true, partial_images: 2 }), '')
    t.same(uses(partial), { partial_images: { uses: 1, param: 'partial_images' } }, `${name}: partial_images 2 marks the feature`)
    t.match(modelFeatureRefusal(partial, model({})), { code: 'MODEL_PARAMETER_UNSUPPORTED', details: { param: 'partial_images' } }, `${name}: refused by default`)
    t.same(detectFeatures(op, json({ prompt: 'p', stream: true, partial_images: 0 }), ''), [], `${name}: partial_images 0 (none) is nothing`)
  }
  const form: ParsedBody = { kind: 'multipart', raw: Buffer.alloc(0), contentType: 'multipart/form-data; boundary=b', summary: { boundary: 'b', fields: { partial_images: '1' }, files: [] } }
  t.same(uses(detectFeatures(featuresOf('images.edits'), form, '')), { partial_images: { uses: 1, param: 'partial_images' } }, 'a multipart form field "1" marks it too')
})
