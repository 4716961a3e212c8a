// Child: the least a billed chat request must do, on the gateway's own store and nothing else:
// the key's HMAC and the key cache, the body parsed, a hold (group commit), the forward and the
// relay, the answer's usage read, a settle (group commit) and a request log row. No plan, no
// pipeline, no limits, no features, no metering beyond the usage object: a floor for what billing
// costs, to set the gateway's own per-request work against (BENCHMARKS.md). Not a mode of the
// gateway, and not a correct one: fixed token prices, chat completions only, no error handling.
import Fastify from 'fastify'
import { Pool } from 'undici'
import { loadConfig } from '../../plugins/apps/gateway/config.js'
import { keyLoader } from '../../plugins/concerns/auth/index.js'
import { newRequestId } from '../../plugins/apps/gateway/index.js'
import { mockEnv, REPO_CONFIG } from '../../test/helpers/gateway.js'
import { BACKLOG, requiredEnv, urlOf } from './addresses.js'
import { withBenchTier } from './bench-config.js'
import { runChild } from './child-runtime.js'
import { openBenchServices } from './seed.js'

/** Nano-units per token, as gpt-4o-mini's list price (0.15 / 0.60 per million). */
const INPUT = 150n
const OUTPUT = 600n

interface ChatUsage { prompt_tokens: number, completion_tokens: number }

await runChild(async () => {
  const upstream = requiredEnv('BENCH_UPSTREAM_URL')
  const config = withBenchTier(loadConfig(REPO_CONFIG, { ...mockEnv(upstream), ...process.env }).config)
  const { services } = await openBenchServices(config)
  const { store, keyCache, requestLog } = services
  const load = keyLoader(store)
  const pool = new Pool(upstream, { connections: 128, pipelining: 1 })
  const app = Fastify({ logger: false, genReqId: newRequestId })
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_req, body, done) => { done(null, body) })
  app.post('/v1/chat/completions', async (req, reply) => {
    const started = performance.now()
    const header = req.headers.authorization ?? ''
    const found = header.startsWith('Bearer ') ? await keyCache.getOrLoad(store.hashKey(header.slice(7)), load) : null
    if (found === null) return await reply.code(401).send({ error: { message: 'invalid key' } })
    const raw = req.body as Buffer
    const json = JSON.parse(raw.toString('utf8')) as { model: string, max_tokens?: number }
    const worst = BigInt(Math.ceil(raw.length / 4)) * INPUT + BigInt(json.max_tokens ?? 4096) * OUTPUT
    const held = await store.ledger.hold({ accountId: found.account.id, amount: worst, floor: 0n, requestId: req.id, ttlMs: 600_000 })
    if (!held.ok) return await reply.code(402).send({ error: { message: 'insufficient credits' } })
    const body = raw.toString('utf8').replace(json.model, json.model.replace(/^openai\//, ''))
    const answer = await pool.request({ path: '/v1/chat/completions', method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer sk-bench' }, body })
    const res = reply.raw
    reply.hijack()
    const type = String(answer.headers['content-type'] ?? 'application/json')
    const sse = type.startsWith('text/event-stream')
    res.writeHead(answer.statusCode, { 'content-type': type })
    const chunks: Buffer[] = []
    let usage: ChatUsage | undefined
    for await (const chunk of answer.body as AsyncIterable<Buffer>) {
      res.write(chunk)
      if (!sse) {
        chunks.push(chunk)
        continue
      }
      // The usage frame: the last `data:` line naming usage.
      const text = chunk.toString('latin1')
      const at = text.indexOf('"usage":{')
      if (at >= 0) usage = (JSON.parse(text.slice(text.lastIndexOf('data: ', at) + 6, text.indexOf('\n', at))) as { usage: ChatUsage }).usage
    }
    res.end()
    if (!sse) usage = (JSON.parse(Buffer.concat(chunks).toString('utf8')) as { usage: ChatUsage }).usage
    const cost = usage === undefined ? worst : BigInt(usage.prompt_tokens) * INPUT + BigInt(usage.completion_tokens) * OUTPUT
    const settled = await store.ledger.settle({ holdId: held.holdId, amount: cost, requestId: req.id })
    requestLog.write({
      requestId: req.id,
      accountId: found.account.id,
      keyId: found.key.id,
      route: 'chat',
      operation: 'chat.completions',
      requestedModel: json.model,
      answeredModel: json.model,
      status: answer.statusCode,
      outcome: 'completed',
      errorCode: null,
      stream: sse,
      usage: { inputTokens: usage?.prompt_tokens ?? 0, outputTokens: usage?.completion_tokens ?? 0, cachedInputTokens: 0, images: 0, audioSeconds: 0, characters: 0, calls: 0, jobs: 0 },
      usageReported: usage !== undefined,
      cost: settled.posted,
      held: worst,
      holdId: held.holdId,
      postingId: `post:${held.holdId}`,
      overage: null,
      unrecovered: null,
      billingStatus: 'BILLED',
      idempotencyKey: null,
      overheadMs: null,
      upstreamMs: null,
      totalMs: performance.now() - started,
      createdAt: new Date()
    })
  })
  app.addHook('onClose', async () => {
    await pool.close()
    await services.close()
  })
  await app.listen({ port: 0, host: '127.0.0.1', backlog: BACKLOG })
  return { url: urlOf(app.server.address()), close: () => app.close() }
})
