// Which instances are live on a shared database, and the config each serves: the instance's row
// (plugins/foundation/store/instances.ts) is written at start, after each reload and every heartbeat, and
// deleted at shutdown. GET /admin/v1/instances lists the rows seen within INSTANCE_TTL_MS.
import { randomUUID } from 'node:crypto'
import { hostname } from 'node:os'
import type { FastifyBaseLogger } from 'fastify'
import type { InstanceListing } from '../admin/config-routes.js'
import { systemClock, type Clock } from '../../foundation/store/clock.js'
import { createInstanceStore, type InstanceStore } from '../../foundation/store/instances.js'
import type { Store } from '../../foundation/store/types.js'

/** How often an instance writes its row. */
export const INSTANCE_HEARTBEAT_MS = 10_000
/** A row not written for this long is an instance gone (three heartbeats missed). */
export const INSTANCE_TTL_MS = 3 * INSTANCE_HEARTBEAT_MS

export interface InstanceRegistryOptions {
  store: Store
  /** The config hash this instance serves now, and when it was last reloaded. */
  hash: () => string
  reloadedAt: () => Date | null
  log: FastifyBaseLogger
  clock?: Clock
  heartbeatMs?: number
  ttlMs?: number
}

export interface InstanceRegistry {
  readonly id: string
  /** Writes the row now (after a reload: the new hash is visible at once). */
  beat (): Promise<void>
  list (): Promise<InstanceListing>
  /** Stops the heartbeat and deletes the row. */
  stop (): Promise<void>
}

export async function startInstanceRegistry (opts: InstanceRegistryOptions): Promise<InstanceRegistry> {
  const clock = opts.clock ?? systemClock
  const rows: InstanceStore = createInstanceStore(opts.store.backend)
  const id = `inst_${randomUUID().replace(/-/g, '').slice(0, 16)}`
  const host = hostname()
  const startedAt = clock.now()
  const ttlMs = opts.ttlMs ?? INSTANCE_TTL_MS
  let lastWarning = ''
  let stopped = false
  // One write at a time, each reading the hash when it runs: a heartbeat in flight at a reload
  // cannot land after the reload's write and put the old hash back (two pool connections
  // could commit them in either order).
  let writing: Promise<void> = Promise.resolve()
  const write = async (): Promise<void> => {
    if (stopped) return
    await rows.upsert({ id, host, pid: process.pid, configHash: opts.hash(), reloadedAt: opts.reloadedAt(), startedAt, seenAt: clock.now() })
  }
  const beat = (): Promise<void> => {
    const next = writing.then(write)
    writing = next.catch(() => {})
    return next
  }
  await beat()
  const timer = setInterval(() => {
    beat().then(() => { lastWarning = '' }, (err: unknown) => {
      const message = err instanceof Error ? err.message.split('\n', 1)[0] ?? 'failed' : 'failed'
      if (message === lastWarning) return
      lastWarning = message
      opts.log.warn({ error: message }, 'instance heartbeat failed')
    })
  }, opts.heartbeatMs ?? INSTANCE_HEARTBEAT_MS)
  timer.unref()
  return {
    id,
    beat,
    async list () {
      const since = new Date(clock.now().getTime() - ttlMs)
      const data = (await rows.list(since)).map((r) => ({
        id: r.id,
        host: r.host,
        pid: r.pid,
        config_hash: r.configHash,
        reloaded_at: r.reloadedAt?.toISOString() ?? null,
        started_at: r.startedAt.toISOString(),
        seen_at: r.seenAt.toISOString(),
        self: r.id === id
      }))
      return { data, self: id, ttl_ms: ttlMs }
    },
    async stop () {
      stopped = true
      clearInterval(timer)
      await writing // a write already under way lands before the row is deleted, not after
      await rows.remove(id)
    }
  }
}
