// CPU seconds per process and for the whole machine, from /proc (Linux; null elsewhere).
// Tells whether the target was the bottleneck and whether something outside the benchmark
// was competing for the cores during a run.
import { readFileSync } from 'node:fs'

const TICKS_PER_SECOND = 100 // USER_HZ; 100 on every mainstream Linux build

/** Which part of a process's CPU time to count: user, system, or both. */
export type CpuKind = 'all' | 'user' | 'sys'

/** CPU seconds a process has used so far (throws when it is gone). */
export function processSeconds (pid: number, kind: CpuKind = 'all'): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  // Fields 14 and 15 of proc(5), utime and stime, are 12 and 13 after "pid (comm) ".
  const user = Number(fields[11])
  const sys = Number(fields[12])
  return (kind === 'user' ? user : kind === 'sys' ? sys : user + sys) / TICKS_PER_SECOND
}

function machineBusySeconds (): number {
  const cpu = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!.trim().split(/\s+/).slice(1).map(Number)
  const [user = 0, nice = 0, system = 0, , , irq = 0, softirq = 0, steal = 0] = cpu
  return (user + nice + system + irq + softirq + steal) / TICKS_PER_SECOND
}

export interface CpuShare {
  /** Percent of one core, over the measured interval. */
  target: number
  mock: number
  /** This process: the load generator. */
  bench: number
  /** Everything else on the machine (other jobs, the kernel's share not charged to us). */
  other: number
  /** Length of the measured interval. */
  seconds: number
}

export interface CpuMeter { stop (): CpuShare | null }

/** `target`: one process, or several (instances of one target) whose CPU is summed. */
export function startCpuMeter (pids: { target: number | readonly number[], mock: number }): CpuMeter {
  const targets = typeof pids.target === 'number' ? [pids.target] : pids.target
  const read = (): number[] | null => {
    try {
      return [targets.reduce((sum, pid) => sum + processSeconds(pid), 0), processSeconds(pids.mock), processSeconds(process.pid), machineBusySeconds()]
    } catch {
      return null
    }
  }
  const t0 = process.hrtime.bigint()
  const a = read()
  return {
    stop () {
      const b = read()
      if (a === null || b === null) return null
      const s = Number(process.hrtime.bigint() - t0) / 1e9
      const pct = (i: number): number => 100 * (b[i]! - a[i]!) / s
      const [target, mock, bench, machine] = [pct(0), pct(1), pct(2), pct(3)]
      return { target, mock, bench, other: Math.max(0, machine - target - mock - bench), seconds: s }
    }
  }
}
