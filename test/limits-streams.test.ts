// Concurrent streams per account: leases taken at admission (streaming routes) or once the body
// asks to stream, renewed while the stream lives, released on end, abort and error; shared by
// two instances through Redis; a killed instance's leases expire within the lease TTL.
import t from 'tap'
import { spawn } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { once } from 'node:events'
import { Redis } from 'ioredis'
import type { LimitsConfig } from '../plugins/foundation/config/types.js'
import { startTestGateway, TEST_REDIS_URL, type TestGateway } from './helpers/gateway.js'
import { writeTestConfig } from './helpers/test-config.js'
import { nodeScript } from './helpers/paths.js'

// Child processes, two instances and paced loops: slow on a loaded machine.
t.setTimeout(300_000)

const LEASE_TTL_MS = 3000
const RENEW_MS = 1000
const LONG = { 'x-mock-chunks': '2000', 'x-mock-chunk-delay-ms': '50' } // 100 s of stream

function limits (streams: number): Partial<LimitsConfig> {
  return {
    default_tier: 'streamy',
    tiers: { streamy: { rank: 0, requests_per_minute: 100_000, concurrent_streams: streams, overdraft: '0' } },
    stream_lease_ttl_ms: LEASE_TTL_MS,
    stream_lease_renew_ms: RENEW_MS,
    // Exact counts across instances: a loaded machine must not push Redis past the timeout
    // after which an instance decides alone (fail-open).
    redis_timeout_ms: 10_000
  }
}

const chatStream = JSON.stringify({ model: 'openai/gpt-4o-mini', stream: true, messages: [{ role: 'user', content: 'hi' }] })
const genaiBody = JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'hi' }] }] })

interface Opened { res: Response, abort: AbortController }

async function openChatStream (url: string, key: string, headers: Record<string, string> = LONG): Promise<Opened> {
  const abort = new AbortController()
  const res = await fetch(`${url}/v1/chat/completions`, { method: 'POST', signal: abort.signal, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers }, body: chatStream })
  return { res, abort }
}

/** genai's streaming route always streams: its lease is taken at admission, with the rate. */
async function openGenaiStream (url: string, key: string, headers: Record<string, string> = LONG): Promise<Opened> {
  const abort = new AbortController()
  const res = await fetch(`${url}/genai/v1beta/models/genai%2Fgemini-2.5-flash:streamGenerateContent?alt=sse`, { method: 'POST', signal: abort.signal, headers: { 'x-goog-api-key': key, 'content-type': 'application/json', ...headers }, body: genaiBody })
  return { res, abort }
}

async function drain (o: Opened): Promise<string> {
  return await o.res.text()
}

/** Ends an answer expected to be a refusal; one wrongly admitted is aborted, not drained (100 s). */
async function dismiss (o: Opened): Promise<void> {
  if (o.res.status === 200) o.abort.abort()
  else await o.res.arrayBuffer()
}

function closeAll (opened: Opened[]): void {
  for (const o of opened) o.abort.abort()
}

async function until (cond: () => Promise<boolean>, timeoutMs: number): Promise<number> {
  const started = Date.now()
  while (!(await cond())) {
    if (Date.now() - started > timeoutMs) return -1
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  return Date.now() - started
}

async function startChild (schema: string, channel: string): Promise<{ url: string, kill: () => Promise<void> }> {
  const child = spawn(process.execPath, [...nodeScript('test/fixtures/limits-instance.ts'), JSON.stringify({ schema, channel, limits: limits(5) })], { stdio: ['ignore', 'pipe', 'inherit'] })
  let out = ''
  child.stdout.setEncoding('utf8')
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout.on('data', (s: string) => {
      out += s
      const line = out.split('\n')[0]
      if (out.includes('\n') && line !== undefined) resolve((JSON.parse(line) as { url: string }).url)
    })
    child.once('exit', (code) => { reject(new Error(`instance exited (${code})`)) })
  })
  return {
    url,
    kill: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return
      child.kill('SIGKILL')
      await once(child, 'exit')
    }
  }
}

for (const mode of ['in process', 'Redis'] as const) {
  t.test(`stream leases (${mode}): released on end, on client abort and on upstream error`, async (t) => {
    const channel = `test-streams-${randomUUID()}`
    // A client that leaves keeps its stream (and lease) while the gateway drains the upstream
    // for its usage (server.drain_timeout_ms): short here, so an abort frees the lease soon.
    const cfg = writeTestConfig((c) => { c.server.drain_timeout_ms = 200 })
    t.teardown(cfg.remove)
    const gw: TestGateway = await startTestGateway({ configFile: cfg.file, limits: limits(2), ...(mode === 'Redis' ? { redisChannel: channel } : {}) })
    const opened: Opened[] = []
    t.teardown(async () => {
      closeAll(opened)
      await gw.close()
    })

    const a = await openChatStream(gw.url, gw.key)
    const b = await openGenaiStream(gw.url, gw.key)
    opened.push(a, b)
    t.equal(a.res.status, 200, 'first stream (body stream: true) admitted')
    t.equal(b.res.status, 200, 'second stream (streaming route) admitted')
    const third = await openChatStream(gw.url, gw.key)
    t.equal(third.res.status, 429, 'a third stream over the limit of 2 is refused')
    t.equal(third.res.headers.get('x-gateway-error-code'), 'LIMIT_RATE_EXCEEDED', 'as LIMIT_RATE_EXCEEDED')
    t.equal(third.res.headers.get('retry-after'), '1', 'with Retry-After')
    await dismiss(third)
    const fourth = await openGenaiStream(gw.url, gw.key)
    t.equal(fourth.res.status, 429, 'a streaming route over the limit is refused at admission too')
    await dismiss(fourth)
    const plain = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { ...gw.auth, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }) })
    t.equal(plain.status, 200, 'a request that does not stream is not limited by the streams')
    await plain.arrayBuffer()

    // Abort: the client leaves, its lease is released.
    a.abort.abort()
    const afterAbort = await until(async () => {
      const o = await openChatStream(gw.url, gw.key)
      if (o.res.status === 200) { opened.push(o); return true }
      await o.res.arrayBuffer()
      return false
    }, 5000)
    t.ok(afterAbort >= 0, `after a client abort a new stream is admitted (${afterAbort} ms)`)

    // End: both streams held now end → two short streams run to their end, one after the other, then two long ones fit.
    closeAll(opened)
    opened.length = 0
    const freed = await until(async () => {
      const o = await openChatStream(gw.url, gw.key, { 'x-mock-chunks': '2' })
      if (o.res.status !== 200) { await o.res.arrayBuffer(); return false }
      await drain(o)
      return true
    }, 5000)
    t.ok(freed >= 0, 'after the aborts a short stream runs to its end')
    for (let i = 0; i < 3; i++) {
      const o = await openChatStream(gw.url, gw.key, { 'x-mock-chunks': '2' })
      t.equal(o.res.status, 200, `short stream ${i + 1} admitted: each ended stream gave its lease back`)
      t.match(await drain(o), /\[DONE\]/, `short stream ${i + 1} ended`)
    }

    // Error: the upstream fails the stream; its lease is released.
    for (let i = 0; i < 3; i++) {
      const o = await openChatStream(gw.url, gw.key, { 'x-mock-status': '500' })
      t.ok(o.res.status >= 500, `upstream error ${i + 1} answered ${o.res.status}`)
      await o.res.arrayBuffer()
    }
    const x = await openChatStream(gw.url, gw.key)
    const y = await openChatStream(gw.url, gw.key)
    opened.push(x, y)
    t.same([x.res.status, y.res.status], [200, 200], 'after three failed streams both leases are free')

    if (mode === 'Redis') {
      const redis = new Redis(TEST_REDIS_URL)
      t.teardown(() => redis.disconnect())
      const set = `${channel}:streams:${gw.account.id}`
      t.equal(await redis.zcard(set), 2, 'Redis holds exactly the two live leases')
      t.ok(await redis.pttl(set) > 0, 'the lease set has a TTL')
      closeAll(opened)
      const empty = await until(async () => await redis.zcard(set) === 0, 5000)
      t.ok(empty >= 0, 'aborting them empties the lease set')
    }
  })
}

t.test('stream limit 5 over two instances; the instance holding them is killed → new streams within the lease TTL', async (t) => {
  const channel = `test-streams-${randomUUID()}`
  const cfg = writeTestConfig((c) => { c.server.drain_timeout_ms = 200 })
  t.teardown(cfg.remove)
  const b = await startTestGateway({ configFile: cfg.file, backend: 'pg', redisChannel: channel, limits: limits(5) })
  const a = await startChild(b.location, channel)
  const opened: Opened[] = []
  t.teardown(async () => {
    closeAll(opened)
    await a.kill()
    await b.close()
  })

  for (let i = 0; i < 5; i++) {
    const o = i % 2 === 0 ? await openChatStream(a.url, b.key) : await openGenaiStream(a.url, b.key)
    opened.push(o)
    t.equal(o.res.status, 200, `stream ${i + 1} of 5 admitted on instance A`)
  }
  const sixth = await openChatStream(b.url, b.key)
  t.equal(sixth.res.status, 429, 'a 6th stream, on instance B, is refused')
  t.equal(sixth.res.headers.get('x-gateway-error-code'), 'LIMIT_RATE_EXCEEDED', 'as LIMIT_RATE_EXCEEDED')
  t.equal(sixth.res.headers.get('retry-after'), '1', 'with Retry-After')
  await dismiss(sixth)

  // Past the lease TTL the leases still hold: A renews them while its streams live.
  await new Promise((resolve) => setTimeout(resolve, LEASE_TTL_MS + RENEW_MS))
  const stillFull = await openGenaiStream(b.url, b.key)
  t.equal(stillFull.res.status, 429, `after ${LEASE_TTL_MS + RENEW_MS} ms (over the lease TTL) the live streams still hold their leases`)
  await dismiss(stillFull)

  await a.kill()
  const killedAt = Date.now()
  const right = await openChatStream(b.url, b.key)
  t.equal(right.res.status, 429, 'right after the kill the dead instance\'s leases still count (nothing released them)')
  await dismiss(right)
  const admittedAfter = await until(async () => {
    const o = await openChatStream(b.url, b.key)
    if (o.res.status === 200) { opened.push(o); return true }
    await o.res.arrayBuffer()
    return false
  }, LEASE_TTL_MS * 3)
  const sinceKill = Date.now() - killedAt
  t.ok(admittedAfter >= 0 && sinceKill <= LEASE_TTL_MS + 1000, `a new stream is admitted within the lease TTL of the kill (${sinceKill} ms, TTL ${LEASE_TTL_MS} ms)`)
  for (let i = 0; i < 4; i++) {
    const o = await openChatStream(b.url, b.key)
    opened.push(o)
    t.equal(o.res.status, 200, `stream ${i + 2} of 5 admitted on instance B`)
  }
  const over = await openChatStream(b.url, b.key)
  t.equal(over.res.status, 429, 'and the limit of 5 holds again')
  await dismiss(over)
})
