import t from 'tap'
import fc from 'fast-check'
import { codePoints } from '../plugins/metering/request-text.js'
import { tokenDialect } from '../plugins/metering/token-dialects.js'

const chat = tokenDialect('chat.completions')
const messages = tokenDialect('messages')

t.test('the quick text count of a chat event is exact or declines', async (t) => {
  const q = chat?.quickText
  if (!q) throw new Error('chat has a quick path')
  fc.assert(fc.property(fc.string({ unit: 'binary' }), fc.boolean(), (text, usageNull) => {
    const data = JSON.stringify({ id: 'c', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content: text }, finish_reason: null }], ...(usageNull ? { usage: null } : {}) })
    const n = q(data)
    return n === undefined || n === codePoints(text)
  }), { numRuns: 2000 })
  t.equal(q('{"choices":[{"delta":{"content":"héllo 👋"}}],"usage":null}'), 7, 'plain text is counted in code points')
  t.equal(q('{"choices":[{"delta":{"content":"a\\"b"}}]}'), undefined, 'escapes are parsed, not guessed')
  t.equal(q('{"choices":[],"usage":{"prompt_tokens":1}}'), undefined, 'a usage chunk is parsed')
  t.equal(q('{"choices":[{"delta":{"content":"a","tool_calls":[]}}]}'), undefined, 'other text keys are parsed')
  t.equal(q('{"choices":[{"delta":{"role":"assistant","content":null}}]}'), undefined, 'no text: parsed')
})

t.test('the quick text count of a messages event is exact or declines', async (t) => {
  const q = messages?.quickText
  if (!q) throw new Error('messages has a quick path')
  fc.assert(fc.property(fc.string({ unit: 'binary' }), (text) => {
    const data = JSON.stringify({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text } })
    const n = q(data)
    return n === undefined || n === codePoints(text)
  }), { numRuns: 2000 })
  t.equal(q('{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":5}}'), undefined, 'usage events are parsed')
  t.equal(q('{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\\"a"}}'), undefined)
})
