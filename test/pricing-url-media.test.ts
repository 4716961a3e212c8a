// Media sent by URL in the worst case: which parts of each family's body count, what the hold
// adds for them, and that the walk stays bounded whatever the client nests.
import t from 'tap'
import { boundsOf } from './helpers/operations.js'
import { checkConfig } from '../plugins/apps/gateway/config.js'
import { compilePrice } from '../plugins/foundation/pricing/compile.js'
import { costOf } from '../plugins/foundation/pricing/cost.js'
import { countFileReferences, countReferencedMedia, countUrlMedia, fileReferencePaths, isFilesApiUri, urlMediaHold } from '../plugins/foundation/pricing/url-media.js'
import { worstCaseUrlMedia, worstCaseUsage, type WorstCaseInput } from '../plugins/foundation/pricing/worst-case.js'
import { modelOf, writeTestConfig } from './helpers/test-config.js'

const IMAGE = 'https://example.test/cat.png'

t.test('chat completions: http(s) image_url parts count, data: URLs do not', async (t) => {
  const body = {
    model: 'openai/gpt-4o',
    messages: [
      { role: 'system', content: 'plain text is no media' },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'compare' },
          { type: 'image_url', image_url: { url: IMAGE, detail: 'high' } },
          { type: 'image_url', image_url: { url: 'HTTP://example.test/dog.png' } },
          { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } },
          { type: 'image_url', image_url: IMAGE },
          { type: 'file', file: { file_data: 'data:application/pdf;base64,AAAA' } }
        ]
      }
    ]
  }
  t.equal(countUrlMedia(body), 3, 'two object URLs and one bare string URL; the data: URL and inline file are body bytes')
})

t.test('responses: input_image and input_file URLs, in messages and tool outputs', async (t) => {
  t.equal(countUrlMedia({ model: 'm', input: 'a string input has no media' }), 0)
  t.equal(countUrlMedia({
    model: 'm',
    input: [
      { role: 'user', content: [{ type: 'input_text', text: 'read these' }, { type: 'input_image', image_url: IMAGE }, { type: 'input_file', file_url: 'https://example.test/a.pdf' }] },
      { type: 'message', role: 'user', content: [{ type: 'input_image', image_url: 'data:image/png;base64,AAAA' }, { type: 'input_image', file_id: 'file_1' }] },
      { type: 'function_call_output', call_id: 'c', output: [{ type: 'input_image', image_url: IMAGE }] }
    ]
  }), 3)
})

t.test('messages: content blocks with a url source, also inside a tool result', async (t) => {
  t.equal(countUrlMedia({
    model: 'anthropic/claude-sonnet-4',
    max_tokens: 10,
    messages: [
      {
        role: 'user',
        content: [
          { type: 'image', source: { type: 'url', url: IMAGE } },
          { type: 'document', source: { type: 'url', url: 'https://example.test/a.pdf' } },
          { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AAAA' } },
          { type: 'tool_result', tool_use_id: 't', content: [{ type: 'image', source: { type: 'url', url: IMAGE } }, { type: 'text', text: 'x' }] }
        ]
      }
    ]
  }), 3)
})

t.test('generate content: fileData.fileUri and file_data.file_uri fetched by the provider (https, gs://, YouTube); a Files API URI is a file reference', async (t) => {
  const body = {
    contents: [
      { role: 'user', parts: [{ text: 'describe' }, { fileData: { mimeType: 'video/mp4', fileUri: 'https://generativelanguage.googleapis.com/v1beta/files/abc' } }] },
      { role: 'user', parts: [{ file_data: { mime_type: 'application/pdf', file_uri: 'gs://bucket/a.pdf' } }, { inlineData: { mimeType: 'image/png', data: 'AAAA' } }] }
    ],
    systemInstruction: { parts: [{ fileData: { fileUri: 'https://www.youtube.com/watch?v=x' } }, { fileData: { fileUri: 'files/xyz' } }] }
  }
  t.equal(countUrlMedia(body), 2, 'gs:// and YouTube')
  t.equal(countFileReferences(body), 2, 'the Files API URI and the bare name')
  t.same(fileReferencePaths(body, 5), ['contents[0].parts[1].fileData.fileUri', 'systemInstruction.parts[1].fileData.fileUri'])
  for (const uri of ['files/a', ' files/a', 'FILES/a', 'https://GENERATIVELANGUAGE.googleapis.com/v1beta/files/a', 'https://generativelanguage.googleapis.com./files/a', 'https://u@generativelanguage.googleapis.com/files/a', 'https:\\\\generativelanguage.googleapis.com\\files\\a', 'https://eu.generativelanguage.googleapis.com/files/a']) {
    t.ok(isFilesApiUri(uri), `${uri}: the Files API`)
  }
  for (const uri of ['https://example.com/files/a', 'gs://generativelanguage/files/a', 'https://www.youtube.com/watch?v=x', 'https://generativelanguage.googleapis.com.example.com/files/a', '']) {
    t.notOk(isFilesApiUri(uri), `${JSON.stringify(uri)}: fetched, not stored`)
  }
  t.equal(countUrlMedia({
    contents: [
      { role: 'user', parts: [{ text: 'describe' }, { fileData: { mimeType: 'video/mp4', fileUri: 'https://example.com/a.mp4' } }] },
      { role: 'user', parts: [{ file_data: { mime_type: 'application/pdf', file_uri: 'gs://bucket/a.pdf' } }, { inlineData: { mimeType: 'image/png', data: 'AAAA' } }] }
    ],
    systemInstruction: { parts: [{ fileData: { fileUri: 'https://www.youtube.com/watch?v=x' } }] }
  }), 3)
  t.equal(countUrlMedia({ contents: [{ parts: [{ fileData: { fileUri: '' } }] }] }), 0, 'an empty URI fetches nothing')
})

t.test('inline media: images count per item, documents, video and audio hold the context window, text and input_audio are bytes', async (t) => {
  const png = 'data:image/png;base64,iVBORw0KGgo='
  t.same(countReferencedMedia({
    messages: [{
      role: 'user',
      content: [
        { type: 'image_url', image_url: { url: png } },
        { type: 'image_url', image_url: 'DATA:image/jpeg;base64,AAAA' },
        { type: 'image_url', image_url: { url: 'data:application/pdf;base64,JVBERi0=' } },
        { type: 'file', file: { filename: 'a.pdf', file_data: 'data:application/pdf;base64,JVBERi0=' } },
        { type: 'input_audio', input_audio: { data: 'UklGRg==', format: 'wav' } },
        { type: 'text', text: png }
      ]
    }]
  }), { urls: 0, files: 0, inlineImages: 2, inlineUnbounded: 2 }, 'chat: two images; a PDF as image_url and a file part; input_audio and a data URL in text are bytes')
  t.same(countReferencedMedia({ input: [{ role: 'user', content: [{ type: 'input_image', image_url: png }, { type: 'input_file', file_data: 'JVBERi0=', filename: 'a.pdf' }] }] }),
    { urls: 0, files: 0, inlineImages: 1, inlineUnbounded: 1 }, 'responses: input_image and input_file data')
  t.same(countReferencedMedia({
    messages: [{
      role: 'user',
      content: [
        { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } },
        { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: 'JVBERi0=' } },
        { type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'plain text' } },
        { type: 'document', source: { type: 'content', content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } }] } },
        { type: 'tool_result', tool_use_id: 't', content: [{ type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: 'JVBERi0=' } }] }
      ]
    }]
  }), { urls: 0, files: 0, inlineImages: 2, inlineUnbounded: 2 }, 'messages: images (also in a content document), PDFs (also in a tool result); a text document is bytes')
  t.same(countReferencedMedia({
    systemInstruction: { parts: [{ inlineData: { mimeType: 'text/plain', data: 'aGk=' } }] },
    contents: [{ parts: [{ inlineData: { mimeType: 'image/webp', data: 'UklGRg==' } }, { inline_data: { mime_type: 'video/mp4', data: 'AAAA' } }, { inlineData: { mimeType: 'audio/flac', data: 'ZkxhQw==' } }, { inlineData: { data: 'AAAA' } }] }]
  }), { urls: 0, files: 0, inlineImages: 1, inlineUnbounded: 3 }, 'genai: an image; video, audio and an untyped payload hold the context window; text is bytes')
})

t.test('the walk reads fixed paths only: deep nesting costs nothing and counts nothing', async (t) => {
  let deep: unknown = { type: 'image_url', image_url: { url: IMAGE } }
  for (let i = 0; i < 100_000; i++) deep = [deep]
  const body = { messages: [{ role: 'user', content: [deep] }], input: [deep], contents: [{ parts: [deep] }] }
  t.equal(countUrlMedia(body), 0, 'an image nested below where a family puts parts is not a part')
  const many = { messages: [{ role: 'user', content: Array.from({ length: 50_000 }, () => ({ type: 'image_url', image_url: { url: IMAGE } })) }] }
  t.equal(countUrlMedia(many), 50_000, 'every part of a long list counts once')
  t.equal(countUrlMedia({ messages: 'not a list', input: { content: [] }, contents: null }), 0, 'shapes that are not lists count 0')
})

t.test('the hold adds count × url_media_item to the worst case, exactly', async (t) => {
  const price = compilePrice({ unit: 'token', input: '2.50', output: '10.00', per: 1000000, url_media_item: '0.0037' })
  t.equal(urlMediaHold(price, 2), 7_400_000n)
  t.equal(urlMediaHold(price, 0), 0n)
  const none = compilePrice({ unit: 'token', input: '2.50', output: '10.00', per: 1000000 })
  t.equal(urlMediaHold(none, 2), 0n, 'a model that declares no price holds nothing for them (as before)')

  // The 258-byte chat body of the issue: two image URLs, max_tokens 1.
  const body = {
    model: 'openai/gpt-4o',
    max_tokens: 1,
    messages: [{ role: 'user', content: [{ type: 'text', text: 'Compare all' }, { type: 'image_url', image_url: { url: 'https://example.test/a.jpg' } }, { type: 'image_url', image_url: { url: 'https://example.test/b.jpg' } }] }]
  }
  const bodyBytes = Buffer.byteLength(JSON.stringify(body))
  t.equal(bodyBytes, 258)
  const input: WorstCaseInput = { bounds: boundsOf('chat.completions'), model: { pricing: { unit: 'token', input: '2.50', output: '10.00', per: 1000000 } }, json: body, bodyBytes }
  t.equal(costOf(none, worstCaseUsage(input)), 655_000n, 'without the media price: 258 input tokens and 1 output token, 0.000655')
  t.equal(worstCaseUrlMedia(input), 2)
  t.equal(costOf(price, worstCaseUsage(input)) + urlMediaHold(price, worstCaseUrlMedia(input)), 655_000n + 7_400_000n)
  t.equal(worstCaseUrlMedia({ ...input, json: undefined } as unknown as WorstCaseInput), 0, 'a body that is not JSON has none')
})

t.test('check: a vision model without url_media_item loads; one on a list without input prices is refused at its line', async (t) => {
  const without = writeTestConfig((c) => {
    const pricing = modelOf(c, 'openai/gpt-4o').pricing
    if (pricing) delete pricing.url_media_item
  })
  t.teardown(without.remove)
  t.same(checkConfig(without.file, {}), [], 'no refusal (README: the overage rule covers it)')
  const misplaced = writeTestConfig((c) => {
    const pricing = modelOf(c, 'openai/sora-2').pricing
    if (pricing) pricing.url_media_item = '0.01'
  })
  t.teardown(misplaced.remove)
  const problems = checkConfig(misplaced.file, {})
  t.equal(problems.length, 1)
  t.match(problems[0], { path: /^models\[\d+\]\.pricing\.url_media_item$/, message: /needs an input price/ })
  t.ok((problems[0]?.line ?? 0) > 0, 'located in the YAML')
})
