// Prompt-cache writes. Anthropic bills input written to its prompt cache at 1.25 × the input price
// (5-minute lifetime) or 2 × (1 hour), and the gateway billed it at the plain input price and held
// it there: a request marking its whole prompt `cache_control: { ttl: "1h" }` cost the operator
// twice what it held. Now `cache_write` / `cache_write_1h` price the usage's `cache_creation`
// split, and a request that marks `cache_control` is held with its input at the dearest write
// rate it may use. Cache reads stay at `cached_input` (0.1 ×). Through the Anthropic SDK, on both
// stores, the mock reporting any split of the prompt as written.
import Anthropic from '@anthropic-ai/sdk'
import t from 'tap'
import { ledgerState, settledRow } from './helpers/billing.js'
import { capturingFetch } from './helpers/capture-fetch.js'
import { startTestGateway, type Backend } from './helpers/gateway.js'
import { checkBounded } from './helpers/wallet-bound.js'

const MODEL = 'anthropic/claude-sonnet-4'
/** claude-sonnet-4 per token, in nano-units: input $3, 5-minute write $3.75, 1-hour write $6, output $15 per 1M. */
const INPUT = 3000n
const WRITE_5M = 3750n
const WRITE_1H = 6000n
const OUTPUT = 15000n
const SYSTEM = 'You are a careful reader. '.repeat(400)

function system (ttl: '5m' | '1h' | null): Anthropic.TextBlockParam[] {
  return [{ type: 'text', text: SYSTEM, ...(ttl === null ? {} : { cache_control: ttl === '1h' ? { type: 'ephemeral', ttl: '1h' } : { type: 'ephemeral' } }) }]
}

for (const backend of ['sqlite', 'pg'] as Backend[]) {
  t.test(`cache writes are charged at their rates, from the usage's split (${backend})`, async (t) => {
    const gw = await startTestGateway({ backend, credit: '5.00' })
    t.teardown(() => gw.close())
    const cap = capturingFetch()
    const client = new Anthropic({ baseURL: gw.url, apiKey: gw.key, maxRetries: 0, fetch: cap.fetch })
    for (const [write5m, write1h] of [[1000, 0], [0, 1500], [700, 800]] as const) {
      await client.messages.create({ model: MODEL, max_tokens: 50, system: system('1h'), messages: [{ role: 'user', content: 'Summarise.' }] }, { headers: { 'x-mock-cache-write': `${write5m},${write1h}` } })
      const row = await settledRow(gw, cap.last().response?.headers.get('x-request-id') ?? '')
      const u = row.usage
      t.equal(u?.cacheWriteTokens ?? 0, write5m, `${write5m} tokens written for 5 minutes`)
      t.equal(u?.cacheWrite1hTokens ?? 0, write1h, `${write1h} for an hour`)
      const plain = BigInt((u?.inputTokens ?? 0) - write5m - write1h)
      const expected = plain * INPUT + BigInt(write5m) * WRITE_5M + BigInt(write1h) * WRITE_1H + BigInt(u?.outputTokens ?? 0) * OUTPUT
      t.equal(row.cost, expected, 'each part at its own rate (exact: per 1M, nano-units a token)')
      t.equal(row.overage, null)
    }
    await checkBounded(t, [gw], 3)
  })

  t.test(`cache_control is held at the dearest write rate it may use (${backend})`, async (t) => {
    const gw = await startTestGateway({ backend, credit: '5.00' })
    t.teardown(() => gw.close())
    const cap = capturingFetch()
    const client = new Anthropic({ baseURL: gw.url, apiKey: gw.key, maxRetries: 0, fetch: cap.fetch })
    const held: Record<string, bigint> = {}
    for (const ttl of [null, '5m', '1h'] as const) {
      // The provider writes the whole prompt (at most it), at the longest lifetime the request asked for.
      const all = 1_000_000
      await client.messages.create({ model: MODEL, max_tokens: 10, system: system(ttl), messages: [{ role: 'user', content: 'Summarise.' }] }, { headers: { 'x-mock-cache-write': ttl === '1h' ? `0,${all}` : `${all},0` } })
      const row = await settledRow(gw, cap.last().response?.headers.get('x-request-id') ?? '')
      held[String(ttl)] = row.held ?? 0n
      t.equal(row.overage, null, `${String(ttl)}: the charge fits its hold`)
      t.ok(row.cost !== null && row.held !== null && row.cost <= row.held)
    }
    t.ok((held['5m'] ?? 0n) > (held.null ?? 0n), 'a 5-minute cache_control holds more than no cache_control')
    t.ok((held['1h'] ?? 0n) > (held['5m'] ?? 0n), 'a 1-hour one more again')
    await checkBounded(t, [gw], 3)
  })

  t.test(`cache_control spelled with JSON escapes is held as written (${backend})`, async (t) => {
    // "cache\u005fcontrol" and "t\u0074l": the provider's JSON parser reads cache_control and a
    // 1-hour ttl; bytes searched for the plain spelling would not, and hold the input at its plain rate.
    const gw = await startTestGateway({ backend, credit: '5.00' })
    t.teardown(() => gw.close())
    const held: Record<string, bigint> = {}
    // The unmarked body differs from the marked one in one letter of the key: the same bytes to
    // bound the input by, so only the mark can make the holds differ.
    for (const [name, mark] of [['unmarked', ', "cache\\u005fcontroX": {"type": "ephemeral", "t\\u0074l": "1\\u0068"}'], ['escaped 1h', ', "cache\\u005fcontrol": {"type": "ephemeral", "t\\u0074l": "1\\u0068"}']] as const) {
      const body = `{"model": "${MODEL}", "max_tokens": 10, "system": [{"type": "text", "text": "${SYSTEM}"${mark}}], "messages": [{"role": "user", "content": "Summarise."}]}`
      const marked = name === 'escaped 1h'
      t.equal((JSON.parse(body) as { system: Array<{ cache_control?: { ttl?: string } }> }).system[0]?.cache_control?.ttl, marked ? '1h' : undefined, `${name}: what a JSON parser reads`)
      const res = await fetch(`${gw.url}/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': gw.key, 'anthropic-version': '2023-06-01', 'x-mock-cache-write': marked ? '0,1000000' : '0,0' }, body })
      t.equal(res.status, 200, `${name}: served`)
      await res.arrayBuffer()
      const row = await settledRow(gw, res.headers.get('x-request-id') ?? '')
      held[name] = row.held ?? 0n
      t.equal(row.overage, null, `${name}: the charge fits its hold`)
      t.ok(row.cost !== null && row.held !== null && row.cost <= row.held, `${name}: cost ${String(row.cost)} within held ${String(row.held)}`)
    }
    t.ok((held['escaped 1h'] ?? 0n) > (held.unmarked ?? 0n), `the escaped 1-hour mark holds more than the same bytes unmarked (${String(held['escaped 1h'])} > ${String(held.unmarked)})`)
    await checkBounded(t, [gw], 2)
  })

  t.test(`a streamed answer's cache writes are charged the same (${backend})`, async (t) => {
    const gw = await startTestGateway({ backend, credit: '5.00' })
    t.teardown(() => gw.close())
    const cap = capturingFetch()
    const client = new Anthropic({ baseURL: gw.url, apiKey: gw.key, maxRetries: 0, fetch: cap.fetch })
    const stream = client.messages.stream({ model: MODEL, max_tokens: 50, system: system('1h'), messages: [{ role: 'user', content: 'Summarise.' }] }, { headers: { 'x-mock-cache-write': '300,900' } })
    await stream.finalMessage()
    const row = await settledRow(gw, cap.last().response?.headers.get('x-request-id') ?? '')
    t.equal(row.usage?.cacheWriteTokens, 300)
    t.equal(row.usage?.cacheWrite1hTokens, 900)
    t.equal(row.usageReported, true)
    await checkBounded(t, [gw], 1)
    t.equal((await ledgerState(gw)).balance + (row.cost ?? 0n), 5_000_000_000n)
  })
}
