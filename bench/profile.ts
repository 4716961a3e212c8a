// Self time per function from a V8 .cpuprofile (node --cpu-prof), for `npm run bench -- --profile`.
// Also runnable alone: tsx bench/profile.ts <file.cpuprofile> [url-substring]
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

interface CallFrame { functionName: string, url: string, lineNumber: number, columnNumber: number }
interface ProfileNode { id: number, callFrame: CallFrame }
interface CpuProfile { nodes: ProfileNode[], samples: number[], timeDeltas: number[] }

export interface Frame {
  name: string
  /** File (and line where known), relative to the repository where possible. */
  where: string
  selfMs: number
  /** Share of all sampled time (idle included). */
  percent: number
}

const ROOT = fileURLToPath(new URL('..', import.meta.url))

function where (f: CallFrame): string {
  const url = f.url.startsWith('file://') ? fileURLToPath(f.url) : f.url
  const rel = url.startsWith(ROOT) ? url.slice(ROOT.length) : url
  if (rel === '') return '(native)'
  // tsx-compiled modules report every function at line 0: a line number would mislead.
  return f.lineNumber > 0 ? `${rel}:${f.lineNumber + 1}` : rel
}

/** Self time per function, most first; `only` keeps frames whose URL contains it. */
export function selfTimes (file: string, only?: string): Frame[] {
  const p = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile
  const byId = new Map(p.nodes.map((n) => [n.id, n]))
  const self = new Map<string, Frame>()
  let total = 0
  for (let i = 0; i < p.samples.length; i++) {
    const dt = (p.timeDeltas[i] ?? 0) / 1000
    total += dt
    const node = byId.get(p.samples[i]!)
    if (!node) continue
    if (only !== undefined && !node.callFrame.url.includes(only)) continue
    const name = node.callFrame.functionName || '(anonymous)'
    const w = where(node.callFrame)
    const key = `${name} ${w}`
    const f = self.get(key) ?? { name, where: w, selfMs: 0, percent: 0 }
    f.selfMs += dt
    self.set(key, f)
  }
  const frames = [...self.values()].sort((a, b) => b.selfMs - a.selfMs)
  for (const f of frames) f.percent = total === 0 ? 0 : 100 * f.selfMs / total
  return frames
}

function busyMs (file: string): number {
  return selfTimes(file).filter((f) => f.name !== '(idle)').reduce((sum, f) => sum + f.selfMs, 0)
}

/**
 * The profile of the thread that did the work. --cpu-prof writes one file per thread, and
 * under tsx the module loader runs in a worker thread of its own.
 */
export function busiestProfile (dir: string): string | undefined {
  const files = readdirSync(dir).filter((f) => f.endsWith('.cpuprofile')).map((f) => join(dir, f))
  return files.map((f) => ({ f, busy: busyMs(f) })).sort((a, b) => b.busy - a.busy)[0]?.f
}

export function formatFrames (frames: readonly Frame[], n: number): string {
  return frames.slice(0, n).map((f, i) => `${String(i + 1).padStart(3)}. ${f.selfMs.toFixed(0).padStart(7)} ms ${f.percent.toFixed(1).padStart(5)}%  ${f.name}  ${f.where}`).join('\n')
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  const file = process.argv[2]
  if (file === undefined) {
    process.stderr.write('usage: tsx bench/profile.ts <file.cpuprofile> [url-substring]\n')
    process.exit(2)
  }
  process.stdout.write(formatFrames(selfTimes(file, process.argv[3]), 25) + '\n')
}
