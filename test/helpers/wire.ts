// Byte-level expectations about what the gateway forwards: the client's bytes with only the
// model value replaced. Written independently of the gateway's own rewriting code.
import { createHash, randomBytes } from 'node:crypto'
import { freePort } from './free-port.js'

function replaceOnce (buf: Buffer, from: Buffer, to: Buffer): Buffer {
  const at = buf.indexOf(from)
  if (at === -1) throw new Error(`expected bytes not found: ${from.toString('latin1')}`)
  if (buf.indexOf(from, at + 1) !== -1) throw new Error(`bytes occur more than once: ${from.toString('latin1')}`)
  return Buffer.concat([buf.subarray(0, at), to, buf.subarray(at + from.length)])
}

/** The JSON body with its one `"model":"<from>"` pair (as JSON.stringify writes it) now naming `to`. */
export function withJsonModel (body: Buffer, from: string, to: string): Buffer {
  return replaceOnce(body, Buffer.from(`"model":${JSON.stringify(from)}`), Buffer.from(`"model":${JSON.stringify(to)}`))
}

/** The multipart body with the value of its one plain `model` field replaced. */
export function withMultipartModel (body: Buffer, from: string, to: string): Buffer {
  const head = 'Content-Disposition: form-data; name="model"\r\n\r\n'
  return replaceOnce(body, Buffer.from(`${head}${from}\r\n`), Buffer.from(`${head}${to}\r\n`))
}

export interface MultipartPart {
  name: string
  value: string | Buffer
  filename?: string
  contentType?: string
}

/** A multipart/form-data body built by hand, so the test knows every byte it sends. */
export function multipartBody (parts: readonly MultipartPart[], boundary = `----gateway-test-${randomBytes(8).toString('hex')}`): { body: Buffer, contentType: string } {
  const chunks: Buffer[] = []
  for (const p of parts) {
    let head = `--${boundary}\r\nContent-Disposition: form-data; name="${p.name}"`
    if (p.filename !== undefined) head += `; filename="${p.filename}"`
    head += '\r\n'
    if (p.contentType !== undefined) head += `Content-Type: ${p.contentType}\r\n`
    chunks.push(Buffer.from(`${head}\r\n`), typeof p.value === 'string' ? Buffer.from(p.value) : p.value, Buffer.from('\r\n'))
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`))
  return { body: Buffer.concat(chunks), contentType: `multipart/form-data; boundary=${boundary}` }
}

export function sha256 (buf: Buffer): string {
  return createHash('sha256').update(buf).digest('hex')
}

/** A PCM WAV: 8 kHz, 8-bit, mono, `samples` bytes of a square-ish wave. */
export function wavFile (samples: number): Buffer {
  const out = Buffer.alloc(44 + samples)
  out.write('RIFF', 0, 'ascii')
  out.writeUInt32LE(36 + samples, 4)
  out.write('WAVEfmt ', 8, 'ascii')
  out.writeUInt32LE(16, 16)
  out.writeUInt16LE(1, 20)
  out.writeUInt16LE(1, 22)
  out.writeUInt32LE(8000, 24)
  out.writeUInt32LE(8000, 28)
  out.writeUInt16LE(1, 32)
  out.writeUInt16LE(8, 34)
  out.write('data', 36, 'ascii')
  out.writeUInt32LE(samples, 40)
  for (let i = 0; i < samples; i++) out[44 + i] = i % 40 < 20 ? 96 : 160
  return out
}

/** Resolves once `cond` holds, checking every 5 ms; rejects after `timeoutMs` naming `what`. */
export async function eventually (cond: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
}

export interface SseEvent {
  /** `event:` field, or null for unnamed events. */
  event: string | null
  data: string
}

/** The events of an SSE body (frames separated by a blank line; CRLF or LF). */
export function sseEvents (text: string): SseEvent[] {
  const out: SseEvent[] = []
  for (const frame of text.split(/\r?\n\r?\n/)) {
    if (frame.trim() === '') continue
    let event: string | null = null
    const data: string[] = []
    for (const line of frame.split(/\r?\n/)) {
      if (line.startsWith('event:')) event = line.slice(6).trim()
      else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''))
    }
    out.push({ event, data: data.join('\n') })
  }
  return out
}

/** A TCP port nothing listens on (see `freePort`: it is taken where no parallel `listen(0)` draws). */
export async function closedPort (): Promise<number> {
  return await freePort()
}
