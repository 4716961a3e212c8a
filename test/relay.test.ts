// The relay on its own, over a real HTTP server: the filter fed after the client left, and a
// client that stops reading.
import { createServer, type Server } from 'node:http'
import { connect, type AddressInfo } from 'node:net'
import { Readable } from 'node:stream'
import t, { type Test } from 'tap'
import { relay, type RelayEnd, type RelayFilter } from '../plugins/concerns/upstream/relay.js'

/** Keeps the last byte of what it has seen until the next chunk or the end (as an SSE filter holds an event). */
function holdingLastByte (): RelayFilter & { pushed: number } {
  let held: Buffer | null = null
  const f = {
    pushed: 0,
    push (chunk: Buffer): Buffer[] {
      f.pushed++
      const out = held ? [held] : []
      if (chunk.length > 1) out.push(chunk.subarray(0, chunk.length - 1))
      held = chunk.subarray(chunk.length - 1)
      return out
    },
    end (): Buffer[] {
      const out = held ? [held] : []
      held = null
      return out
    }
  }
  return f
}

async function serve (handler: (res: import('node:http').ServerResponse) => void): Promise<{ url: string, server: Server }> {
  const server = createServer((_req, res) => handler(res))
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server }
}

t.test('the filter sees every chunk, also after the client left', async (t) => {
  const filter = holdingLastByte()
  let release: () => void = () => {}
  const gate = new Promise<void>((resolve) => { release = resolve })
  const ended = new Promise<RelayEnd>((resolve) => {
    serve((res) => {
      async function * upstream (): AsyncGenerator<Buffer> {
        yield Buffer.from('data: one\n\n')
        await gate // the client leaves here
        yield Buffer.from('data: two\n\n')
        yield Buffer.from('data: three\n\n')
      }
      relay({
        res,
        status: 200,
        headers: { 'content-type': 'text/event-stream' },
        body: Readable.from(upstream()),
        sse: true,
        drainTimeoutMs: 5000,
        writeStallMs: 0,
        abortUpstream: () => {},
        filter,
        errorFrame: () => '',
        onEnd: (end) => { resolve(end) }
      })
    }).then(({ url, server }) => {
      t.teardown(() => { server.close() })
      const controller = new AbortController()
      fetch(url, { signal: controller.signal }).then(async (res) => {
        const reader = res.body?.getReader()
        await reader?.read() // the first bytes arrived
        controller.abort()
        setTimeout(release, 100)
      }, () => {})
    })
  })
  t.equal(await ended, 'client_disconnected')
  t.equal(filter.pushed, 3, 'all three chunks went through the filter')
})

t.test('a client that reads nothing for writeStallMs is cut; the upstream is read to its end for its usage', async (t) => {
  const piece = Buffer.alloc(64 * 1024, 'a')
  const pieces = 512 // 32 MiB: more than the sockets' buffers hold
  let seen = 0
  let aborted = false
  const ended = new Promise<RelayEnd>((resolve) => {
    serve((res) => {
      async function * upstream (): AsyncGenerator<Buffer> {
        for (let i = 0; i < pieces; i++) yield piece
      }
      relay({
        res,
        status: 200,
        headers: { 'content-type': 'application/octet-stream' },
        body: Readable.from(upstream()),
        sse: false,
        drainTimeoutMs: 30_000,
        writeStallMs: 200,
        abortUpstream: () => { aborted = true },
        onChunk: () => { seen++ },
        errorFrame: () => '',
        onEnd: (end) => { resolve(end) }
      })
    }).then(({ url, server }) => {
      t.teardown(() => { server.close() })
      const { port } = new URL(url)
      // A raw socket that never reads: the relay's writes fill it and then wait for 'drain'.
      const socket = connect({ host: '127.0.0.1', port: Number(port) }, () => {
        socket.write('GET / HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n')
        socket.pause()
      })
      socket.on('error', () => {})
      t.teardown(() => { socket.destroy() })
    })
  })
  t.equal(await ended, 'client_stalled', 'ended as a stalled client')
  t.equal(seen, pieces, 'every upstream chunk was still read (and metered) after the cut')
  t.notOk(aborted, 'the upstream ended within the drain window, so it was not cancelled')
})

t.test('frames in flight at a cancel are metered: what was read from the upstream before the abort reaches the meter', async (t) => {
  const piece = Buffer.alloc(64 * 1024, 'b')
  // The upstream body: a stream the test feeds by hand, as undici's body is fed by its socket.
  const body = new Readable({ read () {} })
  let pushed = 0
  let metered = 0
  let meteredAtAbort = -1
  const push = (): void => { body.push(piece); pushed += piece.length }
  let socketOf: (() => void) | null = null
  const ended = new Promise<RelayEnd>((resolve) => {
    serve((res) => {
      relay({
        res,
        status: 200,
        headers: { 'content-type': 'text/event-stream' },
        body,
        sse: true,
        drainTimeoutMs: 0, // the default: a client that leaves cancels its upstream at once
        writeStallMs: 0,
        abortUpstream: () => { meteredAtAbort = metered; body.destroy() },
        onChunk: (chunk) => { metered += chunk.length },
        errorFrame: () => '',
        onEnd: (end) => { resolve(end) }
      })
    }).then(({ url, server }) => {
      t.teardown(() => { server.close() })
      const { port } = new URL(url)
      const socket = connect({ host: '127.0.0.1', port: Number(port) }, () => {
        socket.write('GET / HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n')
        socket.pause() // never reads: the relay's writes fill the socket and it pauses the upstream
      })
      socket.on('error', () => {})
      socketOf = () => { socket.destroy() }
      t.teardown(() => { socket.destroy() })
    }, () => {})
  })
  // Feed the upstream until the relay pauses it on the full client socket.
  for (let i = 0; i < 2000 && !body.isPaused(); i++) {
    push()
    await new Promise((resolve) => setImmediate(resolve))
  }
  t.ok(body.isPaused(), 'the relay paused the upstream on the full client socket')
  const beforeInFlight = metered
  for (let i = 0; i < 5; i++) push() // read from the upstream, not yet relayed: in flight
  t.equal(metered, beforeInFlight, 'the in-flight frames are buffered, not yet seen by the meter')
  ;(socketOf as (() => void) | null)?.()
  t.equal(await ended, 'client_disconnected')
  t.equal(meteredAtAbort, pushed, 'every byte read from the upstream reached the meter before the abort')
  t.equal(metered, pushed, 'and nothing after it')
})

/** The relay over a real server, fed by hand; answers the client's bytes and the relay's res.write calls. */
async function relayByHand (t: Test, feed: (body: Readable, writes: Array<{ bytes: number, atTurnEnd: boolean }>) => void): Promise<{ text: string, end: RelayEnd, writes: Array<{ bytes: number, atTurnEnd: boolean }> }> {
  const body = new Readable({ read () {} })
  const writes: Array<{ bytes: number, atTurnEnd: boolean }> = []
  let end: RelayEnd | undefined
  const { url, server } = await serve((res) => {
    // Each res.write is recorded, with whether a setImmediate queued before it had run yet.
    let turnEnded = false
    const write = res.write.bind(res) as (chunk: Buffer) => boolean
    res.write = ((chunk: Buffer) => {
      writes.push({ bytes: chunk.length, atTurnEnd: turnEnded })
      return write(chunk)
    }) as typeof res.write
    relay({
      res,
      status: 200,
      headers: { 'content-type': 'text/event-stream' },
      body,
      sse: true,
      drainTimeoutMs: 0,
      writeStallMs: 0,
      abortUpstream: () => { body.destroy() },
      errorFrame: () => 'event: error\ndata: {"error":"broken"}\n\n',
      onEnd: (e) => { end = e }
    })
    setImmediate(() => {
      setImmediate(() => { turnEnded = true })
      feed(body, writes)
    })
  })
  t.teardown(() => { server.close() })
  const text = await (await fetch(url)).text()
  return { text, end: end as RelayEnd, writes }
}

t.test('the chunks of one turn leave in one write at its end', async (t) => {
  const events = ['data: {"n":1}\n\n', 'data: {"n":2}\n\n', 'data: {"n":3}\n\n']
  const got = await relayByHand(t, (body) => {
    for (const e of events) body.push(Buffer.from(e)) // one turn: three chunks, as undici hands them
    setTimeout(() => { body.push(Buffer.from('data: [DONE]\n\n')); body.push(null) }, 20)
  })
  t.equal(got.text, events.join('') + 'data: [DONE]\n\n', 'the client gets every event, in order')
  t.same(got.writes.slice(0, 1), [{ bytes: events.join('').length, atTurnEnd: true }], 'the turn\'s three chunks: one write, at the end of the turn')
  t.equal(got.end, 'completed')
})

t.test('a turn\'s chunks past the client\'s high-water mark are written at once, not at the turn\'s end', async (t) => {
  const piece = Buffer.alloc(10 * 1024, 'x') // two of them pass the 16 KiB mark
  const got = await relayByHand(t, (body) => {
    for (let i = 0; i < 3; i++) body.push(piece)
    body.push(null)
  })
  t.equal(got.text.length, 3 * piece.length)
  t.same(got.writes[0], { bytes: 2 * piece.length, atTurnEnd: false }, 'the first two pieces, written as soon as they reached the mark')
})

t.test('a stream that breaks: the events read in its last turn reach the client before the error frame', async (t) => {
  const got = await relayByHand(t, (body) => {
    body.push(Buffer.from('data: {"n":1}\n\n'))
    body.push(Buffer.from('data: {"n":2}\n\n'))
    body.destroy(new Error('upstream socket reset')) // in the same turn as the two events
  })
  t.equal(got.text, 'data: {"n":1}\n\ndata: {"n":2}\n\nevent: error\ndata: {"error":"broken"}\n\n')
  t.equal(got.end, 'stream_interrupted')
})
