// The child side of the bench protocol: start a server, say where it listens, report memory
// and (gateways) what it served and billed on request, stop cleanly on `stop` (so --cpu-prof
// can write its profile).
import { isToChild, type ChildReport, type FromChild, type MemorySample } from '../ipc.js'

export interface ChildServer {
  url: string
  close (): Promise<void>
  /** Extra numbers reported with every memory sample. */
  probe?: () => Record<string, number>
  /** What the server served (and billed) so far, once it is quiet. */
  report?: () => Promise<ChildReport>
}

const startedAt = Date.now()

function send (m: FromChild): void {
  process.send?.(m)
}

function sample (server: ChildServer): MemorySample {
  const m = process.memoryUsage()
  return {
    at: Date.now() - startedAt,
    rss: m.rss,
    heapUsed: m.heapUsed,
    heapTotal: m.heapTotal,
    external: m.external,
    arrayBuffers: m.arrayBuffers,
    probe: server.probe?.() ?? {}
  }
}

function fullGc (): void {
  const gc = (globalThis as { gc?: () => void }).gc
  if (!gc) return
  gc()
  gc()
}

/** Runs `start` and serves the bench protocol until told to stop or the parent goes away. */
export async function runChild (start: () => Promise<ChildServer>): Promise<void> {
  if (!process.send) throw new Error('a bench child must be started with child_process.fork')
  let server: ChildServer
  try {
    server = await start()
  } catch (err) {
    send({ type: 'failed', message: err instanceof Error ? err.stack ?? err.message : String(err) })
    process.exit(1)
  }
  let timer: NodeJS.Timeout | undefined
  let stopping = false
  const stop = async (): Promise<void> => {
    if (stopping) return
    stopping = true
    if (timer) clearInterval(timer)
    await server.close()
    process.exit(0)
  }
  process.on('message', (m: unknown) => {
    if (!isToChild(m)) return
    switch (m.type) {
      case 'sample':
        if (timer) clearInterval(timer)
        send({ type: 'sample', sample: sample(server) })
        timer = setInterval(() => send({ type: 'sample', sample: sample(server) }), m.intervalMs)
        break
      case 'sample-stop':
        if (timer) clearInterval(timer)
        timer = undefined
        break
      case 'snapshot':
        if (m.gc) fullGc()
        send({ type: 'snapshot', id: m.id, sample: sample(server) })
        break
      case 'report': {
        const id = m.id
        const report = server.report
        if (!report) {
          send({ type: 'report', id, report: null })
          break
        }
        report().then(
          (r) => send({ type: 'report', id, report: r }),
          (err: unknown) => send({ type: 'report', id, report: null, error: err instanceof Error ? err.stack ?? err.message : String(err) })
        )
        break
      }
      case 'stop':
        // Not awaited: the child exits when stop() is done.
        stop()
        break
    }
  })
  // The bench process died without saying stop: do not linger.
  process.on('disconnect', () => { stop() })
  send({ type: 'ready', url: server.url })
}
