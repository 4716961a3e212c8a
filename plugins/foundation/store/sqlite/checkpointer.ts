// WAL checkpoints off the event loop. A checkpoint copies the WAL's pages into the database file
// and syncs both files; run by the connection that commits (SQLite's autocheckpoint), it blocks
// the event loop for the whole of it: with the WAL 10,000 pages long, 100–130 ms on the 2-core
// machine (almost all of it the sync of the WAL), every 1–3 s under load — every request in
// flight waits, and at one connection the 99th percentile was that wait (BENCHMARKS.md).
//
// One worker thread per process checkpoints every store's database, on a connection of its own,
// once the WAL holds CHECKPOINT_FRAMES frames: the sync waits in the worker, and the event loop
// goes on committing (a PASSIVE checkpoint takes no lock a writer needs, and never waits for
// one: it skips the frames a reader still needs, for the next poll). The store's connection
// keeps its autocheckpoint as the backstop: if the worker is gone or behind, the WAL still never
// grows past WAL_AUTOCHECKPOINT_PAGES (sqlite-store.ts).
//
// The thread starts when a WAL first reaches CHECKPOINT_FRAMES, not when a store opens: until
// then the event loop reads the same header on the same poll (a 104-byte read). Starting one
// costs 60–130 ms of CPU, which a short-lived process (a CLI command, most test files) need not
// pay: its WAL stays far below 4 MB.
import { openSync, readSync } from 'node:fs'
import { createRequire } from 'node:module'
import { Worker } from 'node:worker_threads'

/** WAL frames (pages) that make the worker checkpoint: 4 MB of 4 KiB pages. */
export const CHECKPOINT_FRAMES = 1_000
/** How often the worker reads each WAL's length (a read of the -shm file's first 104 bytes). */
export const CHECKPOINT_POLL_MS = 50

// The worker, as CommonJS source (no file of its own, so it runs alike from dist/ and under
// tsx). It learns the WAL's length from the wal-index header at the start of the -shm file
// (https://www.sqlite.org/walformat.html: iVersion 3007000 at 0, mxFrame at 16, in the host's
// byte order), frames written since the WAL last restarted, and checkpoints when enough of them
// are not yet in the database file (nBackfill, at 96). A header it cannot read makes it
// checkpoint at every poll instead (a PASSIVE checkpoint of a copied WAL costs a read of the
// wal-index and nothing else).
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads')
const fs = require('node:fs')
const Database = require(workerData.driver)
const { frames, pollMs } = workerData
const open = new Map()
const header = Buffer.alloc(104)
// Never closed (see SHM_DESCRIPTORS in checkpointer.ts): closing one would drop this process's
// POSIX locks on the -shm file, SQLite's among them.
const shms = new Map()
function pending (entry) {
  try {
    let shm = shms.get(entry.file)
    if (shm === undefined) shms.set(entry.file, (shm = fs.openSync(entry.file + '-shm', 'r')))
    if (fs.readSync(shm, header, 0, 104, 0) < 104) return Infinity
    const le = header.readUInt32LE(0) === 3007000
    if (!le && header.readUInt32BE(0) !== 3007000) return Infinity
    const mxFrame = le ? header.readUInt32LE(16) : header.readUInt32BE(16)
    const backfilled = le ? header.readUInt32LE(96) : header.readUInt32BE(96)
    return mxFrame - backfilled
  } catch {
    return Infinity
  }
}
function poll () {
  for (const entry of open.values()) {
    if (pending(entry) < frames) continue
    try {
      entry.db.pragma('wal_checkpoint(PASSIVE)')
      entry.checkpoints++
    } catch {}
  }
}
setInterval(poll, pollMs)
parentPort.on('message', (m) => {
  if (m.kind === 'open') {
    let entry = open.get(m.file)
    if (entry === undefined) {
      try {
        const db = new Database(m.file, { fileMustExist: true, timeout: 0 })
        db.pragma('synchronous = NORMAL')
        entry = { file: m.file, db, users: 0, checkpoints: 0 }
        open.set(m.file, entry)
      } catch {
        // Not checkpointed here: the store's connection does it at its autocheckpoint.
        return
      }
    }
    entry.users++
  } else if (m.kind === 'close') {
    const entry = open.get(m.file)
    if (entry !== undefined && --entry.users === 0) {
      open.delete(m.file)
      try { entry.db.close() } catch {}
    }
    parentPort.postMessage({ kind: 'closed', id: m.id, checkpoints: entry === undefined ? 0 : entry.checkpoints })
  }
})
`

let worker: Worker | null = null
let nextId = 0
const waiting = new Map<number, (checkpoints: number) => void>()

function start (): Worker {
  const driver = createRequire(import.meta.url).resolve('better-sqlite3')
  // No execArgv of the process's own: its `--input-type=module` would run this CommonJS source
  // as a module (where `require` is not defined, and the thread died at once), and its preloads
  // (`--import`, `--require`) have nothing to do here.
  const w = new Worker(WORKER_SOURCE, { eval: true, execArgv: [], workerData: { driver, frames: CHECKPOINT_FRAMES, pollMs: CHECKPOINT_POLL_MS } })
  w.on('message', (m: { kind: string, id?: number, checkpoints?: number }) => {
    if (m.kind === 'closed' && m.id !== undefined) {
      waiting.get(m.id)?.(m.checkpoints ?? 0)
      waiting.delete(m.id)
      if (waiting.size === 0) w.unref()
    }
  })
  // A worker that failed leaves the checkpoints to the connections' autocheckpoint; the next
  // store opened starts another.
  const gone = (): void => {
    if (worker === w) worker = null
    for (const done of waiting.values()) done(0)
    waiting.clear()
  }
  w.on('error', gone)
  w.on('exit', gone)
  // It never keeps the process alive (an exit leaves the rest of the WAL to the next opener),
  // and it stays for the process's next store: a thread is not started per store. After the
  // listeners: adding a 'message' listener refs the worker again.
  w.unref()
  return w
}

/** Whether this process has started the checkpointing thread (it starts at the first WAL past CHECKPOINT_FRAMES). */
export function checkpointerStarted (): boolean {
  return worker !== null
}

/**
 * WAL frames not yet in the database file, from the wal-index header: 0 while it is not all
 * written yet, Infinity for a header of another version (the worker then checkpoints at every
 * poll, as it does for one it cannot read).
 */
function pendingFrames (shm: number, header: Buffer): number {
  if (readSync(shm, header, 0, 104, 0) < 104) return 0
  const le = header.readUInt32LE(0) === 3007000
  if (!le && header.readUInt32BE(0) !== 3007000) return Infinity
  return le ? header.readUInt32LE(16) - header.readUInt32LE(96) : header.readUInt32BE(16) - header.readUInt32BE(96)
}

/**
 * The descriptors the header is read through, one per file, kept for the life of the process:
 * POSIX record locks belong to the process, and closing any descriptor of a file drops all of
 * the process's locks on it (https://www.sqlite.org/howtocorrupt.html, 2.2). SQLite's
 * connections hold theirs on the -shm file for as long as they are open (the shared lock that
 * tells a newly opening process the wal-index is in use, and would otherwise let it reset the
 * file under them), so a descriptor of our own is never closed. One per database file; a file
 * replaced at the same path keeps the old descriptor, and its WAL is then left to the backstop.
 */
const SHM_DESCRIPTORS = new Map<string, number>()

function shmOf (file: string): number {
  let fd = SHM_DESCRIPTORS.get(file)
  if (fd === undefined) SHM_DESCRIPTORS.set(file, (fd = openSync(`${file}-shm`, 'r')))
  return fd
}

/** A lease whose file the worker has not been asked to checkpoint yet (its WAL stayed short). */
interface Watched { file: string, handOver (w: Worker): void }

/** The files watched on the event loop until the first of them reaches CHECKPOINT_FRAMES. */
const watched = new Set<Watched>()
let watch: ReturnType<typeof setInterval> | null = null
const header = Buffer.alloc(104)

function stopWatching (): void {
  if (watch !== null) clearInterval(watch)
  watch = null
}

/** One poll of the watched WALs: the first one past the threshold starts the worker, which takes them all. */
function pollWatched (): void {
  let due = false
  for (const entry of watched) {
    try {
      if (pendingFrames(shmOf(entry.file), header) >= CHECKPOINT_FRAMES) due = true
    } catch {
      // No -shm yet (nothing committed), or unreadable: the next poll tries again.
    }
  }
  if (!due) return
  stopWatching()
  let w: Worker
  try {
    w = worker ??= start()
  } catch {
    // No thread to be had: the connections' autocheckpoint does the work, as before the worker.
    watched.clear()
    return
  }
  for (const entry of watched) entry.handOver(w)
  watched.clear()
}

/** A database's place in the checkpointer: `close` before the store's own connection closes. */
export interface CheckpointLease {
  /** Resolves with the checkpoints the worker ran for this file, once its connection closed. */
  close (): Promise<number>
}

/** Has the worker checkpoint `file` (a database in WAL mode) until the lease is closed. */
export function checkpointInBackground (file: string): CheckpointLease {
  // The worker this lease handed its file to, once it did.
  let w: Worker | null = null
  const handOver = (to: Worker): void => {
    w = to
    to.postMessage({ kind: 'open', file })
  }
  const entry: Watched = { file, handOver }
  if (worker !== null) {
    handOver(worker)
  } else {
    watched.add(entry)
    if (watch === null) {
      watch = setInterval(pollWatched, CHECKPOINT_POLL_MS)
      watch.unref()
    }
  }
  let closed: Promise<number> | null = null
  return {
    close () {
      closed ??= new Promise<number>((resolve) => {
        if (watched.delete(entry)) {
          // Never handed over: no checkpoint ran for it.
          if (watched.size === 0) stopWatching()
          resolve(0)
          return
        }
        // A worker that is gone closed its connections with it.
        const to = w
        if (to === null || worker !== to) {
          resolve(0)
          return
        }
        const id = nextId++
        waiting.set(id, resolve)
        // Held while its answer is awaited: nothing else may be keeping the process alive.
        to.ref()
        to.postMessage({ kind: 'close', file, id })
      })
      return closed
    },
  }
}
