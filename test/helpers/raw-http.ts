// A hand-driven HTTP/1.1 client over one TCP socket (127.0.0.1), for hostile-client tests:
// it can stop reading, send a body one byte at a time, or hold a connection open, which no
// SDK or fetch lets a test do. It parses just enough of an answer to check it.
import { connect, type Socket } from 'node:net'

export interface RawAnswer {
  status: number
  headers: Record<string, string>
  body: Buffer
}

/** Parses a complete answer (head and as much body as arrived); null before the head is whole. */
export function parseAnswer (bytes: Buffer): RawAnswer | null {
  const end = bytes.indexOf('\r\n\r\n')
  if (end === -1) return null
  const [statusLine, ...lines] = bytes.subarray(0, end).toString('latin1').split('\r\n')
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(statusLine ?? '')?.[1] ?? 0)
  const headers: Record<string, string> = {}
  for (const line of lines) {
    const colon = line.indexOf(':')
    if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim()
  }
  return { status, headers, body: bytes.subarray(end + 4) }
}

export interface RawConnection {
  socket: Socket
  /** Every byte received so far. */
  received (): Buffer
  /** Resolves when the server closed the connection (or it broke), with what was received. */
  closed: Promise<Buffer>
}

/** Opens a connection; it reads what arrives unless `paused` (then the kernel buffers fill and stop the sender). */
export async function openConnection (url: string, opts: { paused?: boolean } = {}): Promise<RawConnection> {
  const { port } = new URL(url)
  const socket = connect({ host: '127.0.0.1', port: Number(port) })
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve)
    socket.once('error', reject)
  })
  const chunks: Buffer[] = []
  const closed = new Promise<Buffer>((resolve) => {
    socket.on('close', () => { resolve(Buffer.concat(chunks)) })
  })
  socket.on('error', () => {}) // a reset is an outcome the test reads from `closed`
  socket.on('data', (c: Buffer) => { chunks.push(c) })
  if (opts.paused === true) socket.pause()
  return { socket, received: () => Buffer.concat(chunks), closed }
}

/** The head of a request, ending with the blank line. */
export function requestHead (method: string, path: string, headers: Record<string, string | number>): string {
  let head = `${method} ${path} HTTP/1.1\r\nhost: 127.0.0.1\r\n`
  for (const [name, value] of Object.entries(headers)) head += `${name}: ${value}\r\n`
  return head + '\r\n'
}

/** Resolves with the first answer whose head and Content-Length body arrived, or null if the connection closed first. */
export async function answerOn (conn: RawConnection, timeoutMs: number): Promise<RawAnswer | null> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const a = parseAnswer(conn.received())
    const length = Number(a?.headers['content-length'] ?? NaN)
    if (a !== null && (!Number.isFinite(length) || a.body.length >= length)) return a
    if (conn.socket.destroyed || conn.socket.readableEnded) return parseAnswer(await conn.closed)
    if (Date.now() > deadline) throw new Error(`no answer within ${timeoutMs} ms`)
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}

/** Whether the server closed the connection within `timeoutMs` (polled, bounded). */
export async function closedWithin (conn: RawConnection, timeoutMs: number): Promise<boolean> {
  const timer = new Promise<false>((resolve) => { setTimeout(() => { resolve(false) }, timeoutMs).unref() })
  return await Promise.race([conn.closed.then(() => true), timer])
}

/**
 * Writes `body` in `chunkSize` pieces, waiting for the socket to take each, until it is all
 * written or the server answered or closed. Answers how many bytes were written.
 */
export async function writeUntilAnswered (conn: RawConnection, body: Buffer, chunkSize = 64 * 1024): Promise<number> {
  let sent = 0
  while (sent < body.length) {
    if (conn.socket.destroyed || conn.socket.writableEnded || parseAnswer(conn.received()) !== null) return sent
    const piece = body.subarray(sent, sent + chunkSize)
    const room = conn.socket.write(piece)
    sent += piece.length
    if (!room) {
      await new Promise<void>((resolve) => {
        const done = (): void => { conn.socket.off('drain', done); conn.socket.off('close', done); resolve() }
        conn.socket.once('drain', done)
        conn.socket.once('close', done)
      })
    }
  }
  return sent
}

/** A multipart/form-data body built by hand (exact bytes, any number of parts). */
export function multipartOf (boundary: string, parts: Array<{ name: string, value: string | Buffer, filename?: string, contentType?: string }>): Buffer {
  const pieces: Buffer[] = []
  for (const p of parts) {
    let head = `--${boundary}\r\nContent-Disposition: form-data; name="${p.name}"`
    if (p.filename !== undefined) head += `; filename="${p.filename}"\r\nContent-Type: ${p.contentType ?? 'application/octet-stream'}`
    pieces.push(Buffer.from(head + '\r\n\r\n'), Buffer.isBuffer(p.value) ? p.value : Buffer.from(p.value), Buffer.from('\r\n'))
  }
  pieces.push(Buffer.from(`--${boundary}--\r\n`))
  return Buffer.concat(pieces)
}
