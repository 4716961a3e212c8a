// One meter per operation family behind one small interface: it sees the upstream's bytes as
// the relay passes them on (never holding the body) and tells the usage when the answer ends.

import { createSpeechMeter, createTranscriptionMeter } from './audio-meters.js'
import { createImageMeter } from './image-meter.js'
import { createJobMeter, createJobPollMeter } from './job-meter.js'
import type { Meter, MeterInput } from './meter-types.js'
import type { ChunkFilter } from './usage-chunk-filter.js'
import { requestChars } from './request-text.js'
import { tokenDialect } from './token-dialects.js'
import { createTokenMeter } from './token-meter.js'
import { emptyUsage, tokensFromChars, tokenUsage, type Usage } from './usage.js'

export type { Meter, MeterInput, RequestFacts } from './meter-types.js'

const IMAGE_OPERATIONS: ReadonlySet<string> = new Set(['images.generations', 'genai.generateImages', 'genai.editImage', 'genai.upscaleImage'])
const JOB_OPERATIONS: ReadonlySet<string> = new Set(['videos.create', 'music.create', 'genai.generateVideos'])
const JOB_POLL_OPERATIONS: ReadonlySet<string> = new Set(['videos.get', 'jobs.get'])

/** Operations the meter knows how to read. Others (job polls, content downloads) bill nothing. */
export const METERED_OPERATIONS: ReadonlySet<string> = new Set([
  'chat.completions', 'responses', 'messages', 'genai.generateContent', 'genai.streamGenerateContent',
  ...IMAGE_OPERATIONS, 'images.edits', 'audio.transcriptions', 'audio.speech', ...JOB_OPERATIONS
])

function fixedMeter (usage: Usage): Meter {
  return { onChunk: () => {}, finish: () => ({ ...usage }) }
}

function meterFor (input: MeterInput): Meter {
  const dialect = tokenDialect(input.operation)
  if (dialect) return createTokenMeter(dialect, input)
  if (IMAGE_OPERATIONS.has(input.operation)) return createImageMeter(input, false)
  if (JOB_OPERATIONS.has(input.operation)) return createJobMeter()
  if (JOB_POLL_OPERATIONS.has(input.operation)) return createJobPollMeter()
  switch (input.operation) {
    case 'images.edits': return createImageMeter(input, true)
    case 'audio.transcriptions': return createTranscriptionMeter(input)
    case 'audio.speech': return createSpeechMeter(input)
    default: return fixedMeter(emptyUsage())
  }
}

/** What is billed when a meter itself failed: the request's estimate, marked as such. */
function fallbackUsage (input: MeterInput): Usage {
  const usage = tokenUsage(undefined, { inputTokens: tokensFromChars(requestChars(input.request)), outputTokens: 0 })
  if (input.operation === 'images.edits') usage.calls = 1
  if (JOB_OPERATIONS.has(input.operation)) usage.jobs = 1
  return usage
}

/**
 * Creates the meter of one upstream answer. A non-2xx answer produced nothing billable. The
 * returned meter never throws: a failure inside it turns the result into an estimate, since a
 * metering bug must neither break the client's stream nor make the request free.
 */
export function createMeter (input: MeterInput): Meter {
  if (input.status !== undefined && (input.status < 200 || input.status > 299)) return fixedMeter(emptyUsage())
  let inner: Meter | undefined
  try {
    inner = meterFor(input)
  } catch {
    inner = undefined
  }
  let result: Usage | undefined
  const innerFilter = inner?.filter
  // Filtering goes on whatever happens to the metering: the client's stream must not break.
  // After a failure the stream passes through as it comes (and the usage is an estimate).
  let filterOk = true
  const filter: ChunkFilter | undefined = innerFilter && {
    push: (chunk: Buffer): Buffer[] => {
      if (filterOk) {
        try {
          return innerFilter.push(chunk)
        } catch {
          filterOk = false
          inner = undefined
        }
      }
      return [chunk]
    },
    end: (): Buffer[] => {
      if (filterOk) {
        try {
          return innerFilter.end()
        } catch {
          filterOk = false
          inner = undefined
        }
      }
      return []
    }
  }
  return {
    ...(filter ? { filter } : {}),
    onChunk: (chunk: Buffer): void => {
      if (!inner || result) return
      try {
        inner.onChunk(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk))
      } catch {
        inner = undefined
      }
    },
    finish: (): Usage => {
      if (result) return { ...result }
      try {
        result = inner ? inner.finish() : fallbackUsage(input)
      } catch {
        inner = undefined
        result = fallbackUsage(input)
      }
      return { ...result }
    },
    get jobId () {
      return result ? inner?.jobId : undefined
    },
    get jobStatus () {
      return result ? inner?.jobStatus : undefined
    }
  }
}
