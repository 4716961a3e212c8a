import { createBodyReader, isRecord, parseCaptured } from './body-reader.js'
import type { Meter } from './meter-types.js'
import { emptyUsage, type Usage } from './usage.js'

/** Where the upstream puts the job's id: OpenAI videos and music jobs `id`, Gemini operations `name`. */
const ID_KEYS = ['id', 'name', 'job_id'] as const
const MAX_ID_LENGTH = 512

/** The job id of a job-creating answer's captured top-level values, if it has a usable one. */
export function jobIdOf (captured: ReadonlyMap<string, unknown>): string | undefined {
  for (const key of ID_KEYS) {
    const v = captured.get(key)
    if (typeof v === 'string' && v.length > 0 && v.length <= MAX_ID_LENGTH) return v
  }
  return undefined
}

/**
 * Job creation (videos, music, Gemini long-running operations): billing happens when the job
 * completes, so the meter only records that one job was created and the upstream's id for it.
 * An answer that is an error object (`error` not null: a video object carries `error: null`)
 * created nothing.
 */
export function createJobMeter (): Meter {
  let jobId: string | undefined
  const reader = createBodyReader({ sse: false, scan: { capture: new Set([...ID_KEYS, 'error']) } })
  return {
    onChunk: (chunk) => reader.push(chunk),
    finish: (): Usage => {
      const usage = emptyUsage()
      const scan = reader.scan()
      const captured = scan ? parseCaptured(scan.captured) : new Map<string, unknown>()
      if (isRecord(captured.get('error'))) return usage
      jobId = jobIdOf(captured)
      usage.jobs = 1
      usage.reported = jobId !== undefined
      return usage
    },
    get jobId () { return jobId }
  }
}

/**
 * A job poll (`GET /v1/videos/{id}`, `GET /v1/jobs/{id}`) bills nothing itself, but its answer
 * tells when the job ended: `status` `completed` (then the job's hold is posted) or `failed`
 * (then it is released).
 */
export function createJobPollMeter (): Meter {
  let jobId: string | undefined
  let jobStatus: string | undefined
  const reader = createBodyReader({ sse: false, scan: { capture: new Set([...ID_KEYS, 'status']) } })
  return {
    onChunk: (chunk) => reader.push(chunk),
    finish: (): Usage => {
      const scan = reader.scan()
      const captured = scan ? parseCaptured(scan.captured) : new Map<string, unknown>()
      jobId = jobIdOf(captured)
      const status = captured.get('status')
      jobStatus = typeof status === 'string' ? status : undefined
      const usage = emptyUsage()
      return usage
    },
    get jobId () { return jobId },
    get jobStatus () { return jobStatus }
  }
}
