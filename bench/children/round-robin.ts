// Child: the simplest load balancer in front of several gateway instances (bench/scale.ts): a
// TCP proxy that hands each new client connection to the next backend in turn (BENCH_BACKENDS,
// comma-separated http://host:port) and pipes bytes both ways. It reads no HTTP: connections are
// kept alive, so every request of one connection goes to the same instance, as behind any
// connection-level (L4) balancer. The gateway keeps no state a request needs on a given
// instance, so no stickiness is needed either way.
import { createConnection, createServer, type Socket } from 'node:net'
import { BACKLOG, requiredEnv, urlOf } from './addresses.js'
import { runChild } from './child-runtime.js'

await runChild(async () => {
  const backends = requiredEnv('BENCH_BACKENDS').split(',').map((u) => new URL(u))
  let next = 0
  const open = new Set<Socket>()
  const perBackend = backends.map(() => 0)
  const server = createServer({ noDelay: true }, (client) => {
    const i = next
    next = (next + 1) % backends.length
    perBackend[i]!++
    const b = backends[i]!
    const upstream = createConnection({ host: b.hostname, port: Number(b.port), noDelay: true })
    open.add(client).add(upstream)
    const end = (): void => {
      client.destroy()
      upstream.destroy()
      open.delete(client)
      open.delete(upstream)
    }
    client.on('error', end).on('close', end)
    upstream.on('error', end).on('close', end)
    client.pipe(upstream)
    upstream.pipe(client)
  })
  await new Promise<void>((resolve) => server.listen({ port: 0, host: '127.0.0.1', backlog: BACKLOG }, resolve))
  return {
    url: urlOf(server.address()),
    probe: () => Object.fromEntries(perBackend.map((n, i) => [`connections${i}`, n])),
    close: async () => {
      for (const s of open) s.destroy()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    }
  }
})
