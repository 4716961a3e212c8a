// Modes of what the embedded store keeps on disk (the SQLite database and its -wal/-shm files,
// the generated server secret): readable by the gateway's user only.
import { chmodSync } from 'node:fs'

export const PRIVATE_DIR_MODE = 0o700
export const PRIVATE_FILE_MODE = 0o600

/** Narrows an existing file to owner read/write; a missing file is left alone. */
export function restrictFile (path: string): void {
  try {
    chmodSync(path, PRIVATE_FILE_MODE)
  } catch (err) {
    if (!(err instanceof Error && 'code' in err && err.code === 'ENOENT')) throw err
  }
}
