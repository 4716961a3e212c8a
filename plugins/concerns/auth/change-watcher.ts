// Revocation that reaches every instance without Redis: each instance reads the store's revision
// of keys and accounts every `intervalMs` (default 500 ms) and drops from its key cache what
// changed. The Redis bus (when there is one) is faster; this bounds the delay without it, and
// when a bus message was lost, to one interval plus one read (docs/security.md).
import type { KeyChangeFeed } from '../../foundation/store/key-changes.js'
import type { KeyCache } from './key-cache.js'

/** Twice a second: a change is in force within ~0.5 s plus one read. */
export const DEFAULT_KEY_CHANGE_POLL_MS = 500

export interface KeyChangeWatcher {
  /** Reads once more, after any read in flight (tests; the timer reads on its own). Resolves once the cache reflects what the store held when it began. */
  poll(): Promise<void>
  stop(): Promise<void>
}

export interface KeyChangeWatcherOptions {
  feed: KeyChangeFeed
  cache: KeyCache
  intervalMs?: number
  /** A read failed (the database away): told at most once per distinct message; the next tick retries. */
  onError?: (err: Error) => void
}

export async function watchKeyChanges (opts: KeyChangeWatcherOptions): Promise<KeyChangeWatcher> {
  const { feed, cache } = opts
  let revision = await feed.revision()
  let lastError = ''
  const readOnce = async (): Promise<void> => {
    try {
      const changed = await feed.since(revision)
      lastError = ''
      if (changed === null) return
      if (changed.all) cache.clear()
      else {
        for (const id of changed.keys) cache.invalidateKey(id)
        for (const id of changed.accounts) cache.invalidateAccount(id)
      }
      revision = changed.revision
    } catch (err) {
      const e = err instanceof Error ? err : new Error(String(err))
      if (e.message !== lastError) opts.onError?.(e)
      lastError = e.message
    }
  }
  // One read at a time: a slow database makes the timer's reads rarer, never piles them up.
  let busy = false
  let queue: Promise<void> = Promise.resolve()
  const poll = async (): Promise<void> => {
    queue = queue.then(async () => {
      busy = true
      try { await readOnce() } finally { busy = false }
    })
    await queue
  }
  // poll() never rejects: a failed read is reported through onError.
  const timer = setInterval(() => { if (!busy) poll().catch(() => {}) }, opts.intervalMs ?? DEFAULT_KEY_CHANGE_POLL_MS)
  timer.unref()
  return {
    poll,
    async stop () {
      clearInterval(timer)
      await queue
    }
  }
}
