// Who holds a POSIX record lock on a file, asked of the kernel (F_GETLK) from another process:
// a process cannot see its own locks that way, and SQLite's are what the tests check survive.
import { execFileSync } from 'node:child_process'

/**
 * The pid of a process holding a lock on `length` bytes of `file` from `start` that a write lock
 * would meet; 0 when none. SQLite's unix VFS: the database file's shared-lock range is 510 bytes
 * from 2^30 + 2; the -shm file's DMS byte is at 128.
 */
export function lockHolder (file: string, start: number, length: number): number {
  const script = [
    'import fcntl, struct, os',
    `fd = os.open(${JSON.stringify(file)}, os.O_RDWR)`,
    `r = fcntl.fcntl(fd, fcntl.F_GETLK, struct.pack("hhqqi", fcntl.F_WRLCK, 0, ${start}, ${length}, 0))`,
    't, w, s, l, pid = struct.unpack("hhqqi", r)',
    'print(pid if t != fcntl.F_UNLCK else 0)'
  ].join('\n')
  return Number(execFileSync('python3', ['-c', script]).toString().trim())
}
