// Soak: mixed traffic with faults through two gateway instances on one PostgreSQL schema and
// one Redis of their own, for SOAK_MS (default 2 minutes, as CI runs it; the 30-minute run is
// `SOAK_MS=1800000 npx tap test/soak.test.ts`), paced at SOAK_RPS requests a second (default
// 60: half of what it reached flat out on the 2-core CI machine, 121/s, where it took a core
// from the test files running beside it; `SOAK_RPS=0` drives it flat out). The traffic: chat JSON and SSE, Anthropic and
// GenAI calls, upstream 500s and 429s, clients that abort mid-stream, and a Redis restart in the
// middle. Afterwards: no hold left open, the ledger balanced (the wallet is the sum of its
// entries; every charge has its request log row), one request log row per request the gateway
// received, and the gateway's heap flat: the slope of heap-after-GC over the second half of the
// run under 3 MiB/min on a run shorter than 5 minutes (its first minute still fills bounded
// caches and V8's code), under 1 MiB/min on a longer one.
import t from 'tap'
import { spawn, type ChildProcess } from 'node:child_process'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { startMockUpstream } from './fixtures/mock-upstream.js'
import { ledgerState, seededRandom, sleep, waitForRows } from './helpers/billing.js'
import { startTestGateway, type TestGateway } from './helpers/gateway.js'
import { freePort } from './helpers/free-port.js'

const SOAK_MS = Number(process.env.SOAK_MS ?? 120_000)
const WORKERS = 8
const SOAK_RPS = Number(process.env.SOAK_RPS ?? 60)
/** Heap samples (after a full GC) this often. */
const SAMPLE_MS = Math.max(2_000, Math.floor(SOAK_MS / 40))

t.setTimeout(SOAK_MS + 180_000)

setFlagsFromString('--expose-gc')
const gc = runInNewContext('gc') as () => void

/** A Redis server of this test's own, so restarting it disturbs no other test. */
class OwnRedis {
  private proc: ChildProcess | null = null
  constructor (readonly port: number) {}
  get url (): string { return `redis://127.0.0.1:${this.port}` }
  async start (): Promise<void> {
    this.proc = spawn('redis-server', ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' })
    for (let i = 0; i < 100; i++) {
      if (await this.ping()) return
      await sleep(50)
    }
    throw new Error(`redis-server on ${this.port} did not start`)
  }

  async stop (): Promise<void> {
    const p = this.proc
    if (p === null) return
    this.proc = null
    const exited = new Promise((resolve) => p.once('exit', resolve))
    p.kill('SIGKILL')
    await exited
  }

  private async ping (): Promise<boolean> {
    const { Redis } = await import('ioredis')
    const r = new Redis(this.url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null })
    // A server not up yet is the answer false (connect rejects): not ioredis's "Unhandled error event" in the log.
    r.on('error', () => {})
    try {
      await r.connect()
      return (await r.ping()) === 'PONG'
    } catch {
      return false
    } finally {
      r.disconnect()
    }
  }
}

interface Kind {
  name: string
  path: string
  body: (i: number) => unknown
  headers?: Record<string, string>
  /** Abort the request after the answer's first bytes. */
  abort?: boolean
}

const chat = (stream: boolean) => (i: number) => ({ model: 'openai/gpt-4o-mini', stream, messages: [{ role: 'user', content: `soak ${i}` }] })
const KINDS: Kind[] = [
  { name: 'chat json', path: '/v1/chat/completions', body: chat(false) },
  { name: 'chat sse', path: '/v1/chat/completions', body: chat(true), headers: { 'x-mock-chunks': '12' } },
  { name: 'chat sse aborted', path: '/v1/chat/completions', body: chat(true), headers: { 'x-mock-chunks': '40', 'x-mock-chunk-delay-ms': '5' }, abort: true },
  { name: 'upstream 500', path: '/v1/chat/completions', body: chat(false), headers: { 'x-mock-status': '500' } },
  { name: 'upstream 429', path: '/v1/chat/completions', body: chat(false), headers: { 'x-mock-status': '429', 'x-mock-retry-after': '1' } },
  { name: 'messages sse', path: '/v1/messages', body: (i) => ({ model: 'anthropic/claude-sonnet-4', max_tokens: 64, stream: true, messages: [{ role: 'user', content: `soak ${i}` }] }) },
  { name: 'genai', path: '/genai/v1beta/models/genai/gemini-2.5-flash:generateContent', body: (i) => ({ contents: [{ role: 'user', parts: [{ text: `soak ${i}` }] }] }) }
]

/** Least-squares slope of (x, y) points. */
function slope (points: ReadonlyArray<[number, number]>): number {
  const n = points.length
  const mx = points.reduce((s, p) => s + p[0], 0) / n
  const my = points.reduce((s, p) => s + p[1], 0) / n
  let num = 0
  let den = 0
  for (const [x, y] of points) { num += (x - mx) * (y - my); den += (x - mx) ** 2 }
  return den === 0 ? 0 : num / den
}

t.test(`soak: ${SOAK_MS / 1000} s of mixed traffic (${SOAK_RPS > 0 ? `${SOAK_RPS} requests/s` : 'flat out'}) with faults over two instances, PostgreSQL and a restarted Redis`, async (t) => {
  const redis = new OwnRedis(await freePort())
  await redis.start()
  const mock = await startMockUpstream({ record: false })
  const channel = `soak-${process.pid}-${Date.now()}`
  const shared = { backend: 'pg' as const, mock, redisChannel: channel, services: { redisUrl: redis.url } }
  const a = await startTestGateway({ ...shared, credit: '100000.00' })
  const b = await startTestGateway({ ...shared, shareStoreWith: a })
  const gateways: TestGateway[] = [a, b]
  t.teardown(async () => {
    await b.close()
    await a.close()
    await mock.close()
    await redis.stop()
  })

  const random = seededRandom(20261123)
  const counts = new Map<string, { sent: number, statuses: Map<number, number> }>()
  let received = 0
  let next = 0
  const stopAt = Date.now() + SOAK_MS
  // Pacing: each request takes the next slot of 1/SOAK_RPS s; the workers bound the concurrency.
  let slot = Date.now()
  const paced = async (): Promise<void> => {
    if (SOAK_RPS <= 0) return
    slot = Math.max(slot, Date.now()) + 1000 / SOAK_RPS
    const wait = slot - 1000 / SOAK_RPS - Date.now()
    if (wait > 0) await sleep(wait)
  }
  const one = async (): Promise<void> => {
    await paced()
    const i = next++
    const kind = KINDS[Math.floor(random() * KINDS.length)] as Kind
    const gw = gateways[i % 2] as TestGateway
    const c = counts.get(kind.name) ?? { sent: 0, statuses: new Map() }
    counts.set(kind.name, c)
    c.sent++
    const ac = new AbortController()
    try {
      const res = await fetch(gw.url + kind.path, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...gw.auth, ...(kind.headers ?? {}) },
        body: JSON.stringify(kind.body(i)),
        signal: ac.signal
      })
      received++
      c.statuses.set(res.status, (c.statuses.get(res.status) ?? 0) + 1)
      if (kind.abort && res.body) {
        const reader = res.body.getReader()
        await reader.read()
        ac.abort()
        await reader.cancel().catch(() => {})
      } else {
        await res.arrayBuffer()
      }
    } catch (err) {
      if (!ac.signal.aborted) throw err
    }
  }
  const worker = async (): Promise<void> => {
    while (Date.now() < stopAt) await one()
  }

  const heap: Array<[number, number]> = []
  const startedAt = Date.now()
  const sampler = setInterval(() => {
    gc()
    heap.push([(Date.now() - startedAt) / 60_000, process.memoryUsage().heapUsed / 2 ** 20])
  }, SAMPLE_MS)
  // Redis goes away for two seconds in the middle and comes back empty.
  const restart = (async () => {
    await sleep(SOAK_MS / 2)
    await redis.stop()
    await sleep(2_000)
    await redis.start()
  })()
  await Promise.all([...Array.from({ length: WORKERS }, worker), restart])
  clearInterval(sampler)

  const summary = [...counts].map(([k, c]) => `${k}: ${c.sent} (${[...c.statuses].map(([s, n]) => `${s}×${n}`).join(' ')})`).join('; ')
  t.comment(`requests ${next}, answered ${received}: ${summary}`)
  for (const [name, c] of counts) t.ok(c.sent > 0, `${name} was sent`)
  // What the heap's slope is read over. A machine loaded by the files beside it falls behind the
  // pace: on the slow day of 2026-11-27, 3,382 requests of 7,200 in a CI run (the readme test's
  // install runs beside it from the start), 3,507 with callgrind counts beside it, 2,635 with a
  // second suite beside it; the heap stayed flat in each (0.71–1.19 MiB/min). Below a quarter of
  // the pace too little was measured.
  if (SOAK_RPS > 0) t.ok(next >= 0.25 * SOAK_RPS * SOAK_MS / 1000, `the pace held: ${next} requests, at least a quarter of ${SOAK_RPS}/s for ${SOAK_MS / 1000} s`)
  t.equal(counts.get('upstream 500')?.statuses.get(200), undefined, 'an upstream 500 is never a 200')
  t.ok([...(counts.get('chat json')?.statuses.keys() ?? [])].every((s) => s === 200), 'every plain chat request was answered 200, Redis restart included')

  // Everything the gateway received is settled and logged, once.
  const rows = await waitForRows(gateways, next, 60_000)
  t.equal(rows.length, next, 'one request log row per request sent')
  t.equal(new Set(rows.map((r) => r.requestId)).size, rows.length, 'no request logged twice')
  const ledger = await ledgerState(a)
  t.equal(ledger.openHolds, 0, 'no hold left open')
  t.equal(ledger.held, 0n, 'nothing held')
  t.equal(ledger.balance, ledger.entriesSum, 'the wallet is the sum of its entries')
  const billedRows = rows.filter((r) => r.cost !== null && r.billingStatus !== 'NOT_BILLED')
  t.equal(ledger.charges.length, billedRows.length, 'one charge per billed request log row')

  // Memory: heap after a full GC, slope over the second half (the first half warms up).
  const tail = heap.slice(Math.floor(heap.length / 2))
  const mibPerMinute = slope(tail)
  const bound = SOAK_MS < 300_000 ? 3 : 1
  t.comment(`heap after GC: ${heap[0]?.[1].toFixed(1)} MiB at start, ${heap[heap.length - 1]?.[1].toFixed(1)} MiB at end; slope ${mibPerMinute.toFixed(2)} MiB/min over ${tail.length} samples`)
  t.ok(tail.length >= 10, 'enough heap samples')
  t.ok(mibPerMinute < bound, `heap flat: ${mibPerMinute.toFixed(2)} MiB/min < ${bound} MiB/min`)
})
