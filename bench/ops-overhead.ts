// Rough CPU cost per request of the metrics and access-log concerns: the same gateway (SQLite,
// mock upstream in this process) serves N chat requests over a real socket with both concerns
// on, then with both off, alternating; prints process CPU µs per request for each and the
// difference. Not part of `npm run bench`: run with `npx tsx bench/ops-overhead.ts [N] [rounds]`.
import { Writable } from 'node:stream'
import { Agent, request } from 'undici'
import { GatewayMetrics } from '../plugins/concerns/metrics/index.js'
import { startTestGateway, type TestGateway } from '../test/helpers/gateway.js'

const N = Number(process.argv[2] ?? 2000)
const ROUNDS = Number(process.argv[3] ?? 3)
const sink = new Writable({ write (_c, _e, done) { done() } })
const body = JSON.stringify({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hello there' }] })

async function run (gw: TestGateway): Promise<number> {
  const agent = new Agent({ connections: 8 })
  const send = async (): Promise<void> => {
    const res = await request(gw.url + '/v1/chat/completions', { method: 'POST', dispatcher: agent, headers: { 'content-type': 'application/json', ...gw.auth }, body })
    await res.body.text()
    if (res.statusCode !== 200) throw new Error(`status ${res.statusCode}`)
  }
  for (let i = 0; i < 200; i++) await send() // warm-up
  const before = process.cpuUsage()
  let next = 0
  await Promise.all(Array.from({ length: 8 }, async () => { while (next++ < N) await send() }))
  const used = process.cpuUsage(before)
  await agent.close()
  return (used.user + used.system) / N
}

const on = await startTestGateway({ credit: '1000000.00', server: { logger: { level: 'info', stream: sink }, metrics: new GatewayMetrics() } })
const off = await startTestGateway({
  credit: '1000000.00',
  server: { logger: { level: 'info', stream: sink }, metrics: null, plugins: (list) => list.filter((p) => p.name !== 'access-log') }
})
const results: { on: number[], off: number[] } = { on: [], off: [] }
for (let r = 0; r < ROUNDS; r++) {
  results.off.push(await run(off))
  results.on.push(await run(on))
}
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN
console.log(JSON.stringify({ requests: N, rounds: ROUNDS, cpuUsPerRequest: { off: results.off.map(Math.round), on: results.on.map(Math.round) }, medianOff: Math.round(median(results.off)), medianOn: Math.round(median(results.on)), differenceUs: Math.round(median(results.on) - median(results.off)) }))
await on.close()
await off.close()
