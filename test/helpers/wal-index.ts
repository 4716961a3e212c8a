// What SQLite's WAL holds, read where SQLite keeps it: the wal-index header at the start of the
// -shm file (mxFrame: frames in the WAL; nBackfill: those copied into the database file,
// https://www.sqlite.org/walformat.html).
import { openSync, readSync } from 'node:fs'

export interface WalState { mxFrame: number, nBackfill: number }

// One descriptor per -shm file, never closed: closing any descriptor of a file drops every
// POSIX lock this process holds on it, SQLite's own among them (readFileSync opens and closes).
const shmFds = new Map<string, number>()

/** The wal-index header of the database `file` (its `-shm` file). */
export function walState (file: string): WalState {
  const path = `${file}-shm`
  let fd = shmFds.get(path)
  if (fd === undefined) {
    fd = openSync(path, 'r')
    shmFds.set(path, fd)
  }
  const shm = Buffer.alloc(104)
  readSync(fd, shm, 0, shm.length, 0)
  if (shm.readUInt32LE(0) !== 3007000) throw new Error('unexpected wal-index header (not 3007000, little-endian)')
  return { mxFrame: shm.readUInt32LE(16), nBackfill: shm.readUInt32LE(96) }
}
