// Admission runs before the body is read: a client with no key, or a refused key, is answered
// while its upload is still arriving, so it costs the gateway no parsing. Regression for a key-
// less client that made the gateway parse a 25 MiB multipart body of 485k fields (10.8 s) or a
// 10 MB nested JSON (3.6 s of blocked event loop) before answering 401.
import { connect, type Socket } from 'node:net'
import t from 'tap'
import { startTestGateway } from './helpers/gateway.js'

const gw = await startTestGateway()
t.teardown(() => gw.close())
const port = Number(new URL(gw.url).port)

interface RawAnswer { status: number, headers: Record<string, string>, body: string }

/** Reads one HTTP/1.1 answer (with Content-Length) off a socket, or rejects after `timeoutMs`. */
async function readAnswer (socket: Socket, timeoutMs: number): Promise<RawAnswer> {
  return await new Promise((resolve, reject) => {
    let buf = Buffer.alloc(0)
    const timer = setTimeout(() => { reject(new Error(`no answer within ${timeoutMs} ms while the upload was unfinished`)) }, timeoutMs)
    socket.on('data', (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk])
      const end = buf.indexOf('\r\n\r\n')
      if (end === -1) return
      const [statusLine, ...lines] = buf.subarray(0, end).toString('latin1').split('\r\n')
      const headers: Record<string, string> = {}
      for (const l of lines) {
        const i = l.indexOf(':')
        headers[l.slice(0, i).toLowerCase()] = l.slice(i + 1).trim()
      }
      const length = Number(headers['content-length'] ?? 0)
      if (buf.length < end + 4 + length) return
      clearTimeout(timer)
      resolve({ status: Number(statusLine?.split(' ')[1]), headers, body: buf.subarray(end + 4, end + 4 + length).toString('utf8') })
    })
    socket.on('error', reject)
  })
}

/** Sends the headers and the first part of a body that claims `declared` bytes, and never the rest. */
async function partialUpload (path: string, headers: Record<string, string>, declared: number, head: Buffer): Promise<{ socket: Socket, answer: Promise<RawAnswer> }> {
  const socket = connect(port, '127.0.0.1')
  await new Promise((resolve) => socket.once('connect', resolve))
  const answer = readAnswer(socket, 5000)
  const lines = Object.entries({ host: 'gateway', ...headers, 'content-length': String(declared) }).map(([k, v]) => `${k}: ${v}`)
  socket.write(`POST ${path} HTTP/1.1\r\n${lines.join('\r\n')}\r\n\r\n`)
  socket.write(head)
  return { socket, answer }
}

/** The start of a multipart body of many tiny fields, as the finding sent (485k fields in 25 MiB). */
function manyFields (count: number): Buffer {
  const parts: string[] = []
  for (let i = 0; i < count; i++) parts.push(`--b\r\nContent-Disposition: form-data; name="f${i}"\r\n\r\nx\r\n`)
  return Buffer.from(parts.join(''))
}

t.test('a key-less multipart upload is refused before its body arrives', async (t) => {
  const { socket, answer } = await partialUpload('/v1/audio/transcriptions', { 'content-type': 'multipart/form-data; boundary=b' }, 25 * 1024 * 1024, manyFields(2000))
  t.teardown(() => socket.destroy())
  const res = await answer
  t.equal(res.status, 401, 'answered while 25 MiB were declared and ~100 KiB sent')
  t.equal(res.headers['x-gateway-error-code'], 'AUTH_API_KEY_REQUIRED')
  t.equal(JSON.parse(res.body).error.code, 'AUTH_API_KEY_REQUIRED', 'in the chat envelope')
  t.equal(gw.mock.calls.length, 0, 'nothing forwarded')
})

t.test('a key-less deeply nested JSON body is refused before its body arrives', async (t) => {
  const { socket, answer } = await partialUpload('/v1/chat/completions', { 'content-type': 'application/json' }, 10_000_000, Buffer.from('{"model":"openai/gpt-4o","messages":' + '['.repeat(100_000)))
  t.teardown(() => socket.destroy())
  const res = await answer
  t.equal(res.status, 401)
  t.equal(res.headers['x-gateway-error-code'], 'AUTH_API_KEY_REQUIRED')
  t.equal(gw.mock.calls.length, 0, 'nothing forwarded')
})

t.test('a refused key (unknown, in the messages family) is answered before the body too', async (t) => {
  const unknown = 'sk-' + 'A'.repeat(49)
  const { socket, answer } = await partialUpload('/v1/messages', { 'content-type': 'application/json', 'x-api-key': unknown }, 10_000_000, Buffer.from('{"model":"anthropic/claude-sonnet-4","messages":[' + '{"role":"user","content":"x"},'.repeat(1000)))
  t.teardown(() => socket.destroy())
  const res = await answer
  t.equal(res.status, 401)
  const body = JSON.parse(res.body)
  t.equal(body.type, 'error', 'messages envelope')
  t.equal(body.error.code, 'AUTH_INVALID_API_KEY')
  t.equal(gw.mock.calls.length, 0, 'nothing forwarded')
})

t.test('with a valid key the same upload is read, then checked (model refused), nothing forwarded', async (t) => {
  const body = Buffer.from(JSON.stringify({ model: 'openai/gpt-99', messages: [{ role: 'user', content: 'hi' }] }))
  const { socket, answer } = await partialUpload('/v1/chat/completions', { 'content-type': 'application/json', authorization: `Bearer ${gw.key}` }, body.length, body)
  t.teardown(() => socket.destroy())
  const res = await answer
  t.equal(res.status, 404)
  t.equal(res.headers['x-gateway-error-code'], 'MODEL_NOT_FOUND', 'the body was read once the key passed')
})
