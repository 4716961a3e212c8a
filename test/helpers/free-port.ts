import { readFileSync } from 'node:fs'
import { createServer } from 'node:net'

/**
 * A TCP port free on 127.0.0.1 right now (bound, then released), for a server started by someone
 * else or for a connection that must be refused. It is taken below the kernel's ephemeral range,
 * from which every `listen(0)` of the test files running in parallel draws: a port freed inside
 * that range can be handed straight to another file's server (a refused connection once reached
 * one in CI). A random candidate is bound once to check that nothing holds it.
 */
export async function freePort (): Promise<number> {
  const low = ephemeralLow()
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = 20_000 + Math.floor(Math.random() * (low - 20_000))
    if (await bindable(port)) return port
  }
  throw new Error(`no free port found between 20000 and ${low}`)
}

function ephemeralLow (): number {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0])
    if (Number.isInteger(low) && low > 20_100) return low
  } catch {}
  return 32_768
}

async function bindable (port: number): Promise<boolean> {
  const server = createServer()
  const bound = await new Promise<boolean>((resolve) => {
    server.once('error', () => { resolve(false) })
    server.listen(port, '127.0.0.1', () => { resolve(true) })
  })
  if (bound) await new Promise<void>((resolve) => server.close(() => { resolve() }))
  return bound
}
