import { createServer } from 'node:net'

/** A TCP port free on 127.0.0.1 right now (bound, then released), for a server started by someone else. */
export async function freePort (): Promise<number> {
  return await new Promise((resolve, reject) => {
    const s = createServer()
    s.once('error', reject)
    s.listen(0, '127.0.0.1', () => {
      const a = s.address()
      s.close(() => { resolve(typeof a === 'object' && a !== null ? a.port : 0) })
    })
  })
}
