// Child: the baseline. A bare Fastify 5 app forwarding everything to the upstream with
// @fastify/http-proxy (undici Agent, pipelining 1), no parsing, no checks.
import proxy from '@fastify/http-proxy'
import Fastify from 'fastify'
import { BACKLOG, requiredEnv, urlOf } from './addresses.js'
import { runChild } from './child-runtime.js'

await runChild(async () => {
  const upstream = requiredEnv('BENCH_UPSTREAM_URL')
  const connections = Number(process.env.BENCH_UPSTREAM_CONNECTIONS ?? '1024')
  const app = Fastify({ logger: false, bodyLimit: 26_214_400 })
  await app.register(proxy, { upstream, undici: { connections, pipelining: 1 } })
  await app.listen({ port: 0, host: '127.0.0.1', backlog: BACKLOG })
  return { url: urlOf(app.server.address()), close: () => app.close() }
})
