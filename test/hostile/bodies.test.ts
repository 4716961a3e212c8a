// Hostile bodies, on both stores: a 10 MB nesting bomb (it blocked the event loop 3.6 s), a
// multipart body of 100,000 tiny fields (485k were accepted), too many fields or files, and
// bodies over their route's cap. Each is refused while it arrives, in the family's envelope,
// nothing forwarded or held; memory growth of the (in-process) gateway is measured and bounded.
import { monitorEventLoopDelay } from 'node:perf_hooks'
import t, { type Test } from 'tap'
import { startTestGateway, type Backend, type TestGateway } from '../helpers/gateway.js'
import { ledgerState } from '../helpers/billing.js'
import { answerOn, multipartOf, openConnection, requestHead, writeUntilAnswered, type RawAnswer } from '../helpers/raw-http.js'
import { writeTestConfig } from '../helpers/test-config.js'

const MiB = 1024 * 1024
/** What the gateway's resident memory may grow by while it refuses a 10 MB bomb (it never holds it whole). */
const RSS_GROWTH_BOUND = 24 * MiB
/** The longest the event loop may be blocked while a bomb is refused (the probe: 3.6 s). */
const LOOP_BLOCK_BOUND_MS = 500

interface Sent { answer: RawAnswer | null, sent: number, total: number, rssGrowth: number, maxLoopBlockMs: number }

/** Sends head + body on a raw connection, writing until the gateway answers; measures memory and loop delay. */
async function sendBomb (gw: TestGateway, path: string, headers: Record<string, string | number>, body: Buffer): Promise<Sent> {
  globalThis.gc?.()
  const rssBefore = process.memoryUsage().rss
  let rssPeak = rssBefore
  const sampler = setInterval(() => { rssPeak = Math.max(rssPeak, process.memoryUsage().rss) }, 5)
  const loop = monitorEventLoopDelay({ resolution: 10 })
  loop.enable()
  const conn = await openConnection(gw.url)
  try {
    conn.socket.write(requestHead('POST', path, { ...headers, 'content-length': body.length }))
    const sent = await writeUntilAnswered(conn, body)
    const answer = await answerOn(conn, 10_000)
    rssPeak = Math.max(rssPeak, process.memoryUsage().rss)
    return { answer, sent, total: body.length, rssGrowth: rssPeak - rssBefore, maxLoopBlockMs: loop.max / 1e6 }
  } finally {
    clearInterval(sampler)
    loop.disable()
    conn.socket.destroy()
  }
}

function refusedInEnvelope (t: Test, answer: RawAnswer | null, status: number, code: string): void {
  t.equal(answer?.status, status, `HTTP ${status}`)
  t.equal(answer?.headers['x-gateway-error-code'], code)
  t.equal(answer?.headers['x-gateway-billed'], 'false')
  t.equal(answer?.headers['cache-control'], 'no-store')
  t.ok(answer?.headers['x-request-id'], 'X-Request-ID')
  t.equal(answer?.headers.connection, 'close', 'the connection is closed: the rest of the body is not read')
  t.match(JSON.parse(answer?.body.toString('utf8') ?? '{}'), { error: { code } })
}

interface Before { calls: number, charges: number }

/** The counts to compare with, once the requests of earlier tests have settled (settlement follows the answer). */
async function before (gw: TestGateway): Promise<Before> {
  for (let i = 0; i < 250; i++) {
    // Holds first, then the entries: ledgerState reads both at once, not as one snapshot.
    if ((await gw.services.store.ledger.openHolds(gw.account.id)).length === 0) {
      return { calls: gw.mock.calls.length, charges: (await ledgerState(gw)).charges.length }
    }
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  throw new Error('earlier requests did not settle')
}

async function nothingHeldOrForwarded (t: Test, gw: TestGateway, was: Before): Promise<void> {
  t.equal(gw.mock.calls.length, was.calls, 'nothing forwarded')
  const ledger = await ledgerState(gw)
  t.equal(ledger.openHolds, 0, 'nothing held')
  t.equal(ledger.charges.length, was.charges, 'nothing charged')
}

for (const backend of ['sqlite', 'pg'] satisfies Backend[]) {
  t.test(`body bombs are refused while they arrive (${backend})`, async (t) => {
    const gw = await startTestGateway({ backend })
    t.teardown(() => gw.close())

    t.test('a 10 MB nesting bomb: REQUEST_INVALID before it is all sent, memory and loop bounded', async (t) => {
      const was = await before(gw)
      const prefix = '{"model":"openai/gpt-4o","messages":'
      const body = Buffer.alloc(10_000_000, '[')
      body.write(prefix)
      const r = await sendBomb(gw, '/v1/chat/completions', { ...gw.auth, 'content-type': 'application/json' }, body)
      refusedInEnvelope(t, r.answer, 400, 'REQUEST_INVALID')
      t.ok(r.sent < r.total, `refused after ${r.sent} of ${r.total} bytes were written`)
      t.ok(r.rssGrowth < RSS_GROWTH_BOUND, `resident memory grew ${(r.rssGrowth / MiB).toFixed(1)} MiB (bound ${RSS_GROWTH_BOUND / MiB})`)
      t.ok(r.maxLoopBlockMs < LOOP_BLOCK_BOUND_MS, `longest event-loop delay ${r.maxLoopBlockMs.toFixed(0)} ms`)
      await nothingHeldOrForwarded(t, gw, was)
    })

    t.test('nesting at the bound is accepted, one deeper is refused (messages envelope)', async (t) => {
      gw.mock.reset()
      const nested = (depth: number): string => '['.repeat(depth) + ']'.repeat(depth)
      // The body object is level 1, `metadata` level 2: 62 more arrays reach 64.
      const ok = await fetch(`${gw.url}/v1/messages`, {
        method: 'POST',
        headers: { 'x-api-key': gw.key, 'content-type': 'application/json' },
        body: `{"model":"anthropic/claude-haiku-3.5","max_tokens":5,"messages":[{"role":"user","content":"hi"}],"metadata":{"x":${nested(62)}}}`
      })
      t.not(ok.headers.get('x-gateway-error-code'), 'REQUEST_INVALID', `depth 64 passes (HTTP ${ok.status})`)
      await ok.arrayBuffer()
      const deep = await fetch(`${gw.url}/v1/messages`, {
        method: 'POST',
        headers: { 'x-api-key': gw.key, 'content-type': 'application/json' },
        body: `{"model":"anthropic/claude-haiku-3.5","max_tokens":5,"messages":[{"role":"user","content":"hi"}],"metadata":{"x":${nested(63)}}}`
      })
      t.equal(deep.status, 400)
      t.equal(deep.headers.get('x-gateway-error-code'), 'REQUEST_INVALID')
      t.match(await deep.json(), { type: 'error', error: { code: 'REQUEST_INVALID' } })
      t.equal(gw.mock.calls.length, 1, 'only the body at the bound was forwarded')
    })

    t.test('brackets inside strings do not count as nesting', async (t) => {
      const res = await fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { ...gw.auth, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: '[{'.repeat(5000) + '\\"[' }] })
      })
      t.equal(res.status, 200)
      await res.arrayBuffer()
    })

    t.test('100,000 multipart fields: REQUEST_TOO_LARGE before the body is all sent, memory bounded', async (t) => {
      const was = await before(gw)
      const boundary = 'bomb'
      const body = multipartOf(boundary, Array.from({ length: 100_000 }, (_, i) => ({ name: i === 0 ? 'model' : `f${i}`, value: i === 0 ? 'openai/whisper-1' : 'v' })))
      const r = await sendBomb(gw, '/v1/audio/transcriptions', { ...gw.auth, 'content-type': `multipart/form-data; boundary=${boundary}` }, body)
      refusedInEnvelope(t, r.answer, 413, 'REQUEST_TOO_LARGE')
      t.ok(r.sent < r.total, `refused after ${r.sent} of ${r.total} bytes were written`)
      t.ok(r.rssGrowth < RSS_GROWTH_BOUND, `resident memory grew ${(r.rssGrowth / MiB).toFixed(1)} MiB`)
      await nothingHeldOrForwarded(t, gw, was)
    })

    t.test('more fields or files than configured, under the part cap: REQUEST_TOO_LARGE', async (t) => {
      const was = await before(gw)
      const audio = { name: 'file', value: Buffer.alloc(1024), filename: 'a.wav', contentType: 'audio/wav' }
      const fields = multipartOf('f', [{ name: 'model', value: 'openai/whisper-1' }, audio, ...Array.from({ length: 48 }, (_, i) => ({ name: `x${i}`, value: '1' }))])
      const files = multipartOf('g', [{ name: 'model', value: 'openai/whisper-1' }, ...Array.from({ length: 17 }, () => audio)])
      for (const [boundary, body] of [['f', fields], ['g', files]] as const) {
        const res = await fetch(`${gw.url}/v1/audio/transcriptions`, { method: 'POST', headers: { ...gw.auth, 'content-type': `multipart/form-data; boundary=${boundary}` }, body })
        t.equal(res.status, 413)
        t.match(await res.json(), { error: { code: 'REQUEST_TOO_LARGE' } })
      }
      await nothingHeldOrForwarded(t, gw, was)
    })
  })

  t.test(`per-route body caps: JSON smaller than uploads (${backend})`, async (t) => {
    const config = writeTestConfig((c) => {
      c.server.json_body_limit_bytes = 4096
      c.server.body_limit_bytes = 65536
      const speech = c.routes.find((r) => r.path === '/v1/audio/speech')
      if (speech === undefined) throw new Error('no speech route')
      speech.body_limit_bytes = 1024
    })
    t.teardown(config.remove)
    const gw = await startTestGateway({ backend, configFile: config.file })
    t.teardown(() => gw.close())

    t.test('a JSON body over json_body_limit_bytes is refused from its Content-Length, unread', async (t) => {
      const conn = await openConnection(gw.url)
      t.teardown(() => { conn.socket.destroy() })
      conn.socket.write(requestHead('POST', '/v1/chat/completions', { ...gw.auth, 'content-type': 'application/json', 'content-length': 8192 }))
      refusedInEnvelope(t, await answerOn(conn, 5000), 413, 'REQUEST_TOO_LARGE')
    })

    t.test('an upload of the same size is accepted on an upload route', async (t) => {
      const form = new FormData()
      form.set('model', 'openai/whisper-1')
      form.set('file', new Blob([Buffer.alloc(8192)], { type: 'audio/wav' }), 'a.wav')
      const res = await fetch(`${gw.url}/v1/audio/transcriptions`, { method: 'POST', headers: gw.auth, body: form })
      t.not(res.headers.get('x-gateway-error-code'), 'REQUEST_TOO_LARGE', `HTTP ${res.status}`)
      await res.arrayBuffer()
    })

    t.test('a route\'s own body_limit_bytes caps it below the JSON cap', async (t) => {
      const res = await fetch(`${gw.url}/v1/audio/speech`, {
        method: 'POST',
        headers: { ...gw.auth, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'openai/tts-1', voice: 'alloy', input: 'x'.repeat(2000) })
      })
      t.equal(res.status, 413)
      t.equal(res.headers.get('x-gateway-error-code'), 'REQUEST_TOO_LARGE')
      await res.arrayBuffer()
    })
  })
}
