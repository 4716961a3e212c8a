// One meter per operation family behind one small interface: it sees the upstream's bytes as
// the relay passes them on (never holding the body) and tells the usage when the answer ends.

import { createSpeechMeter, createTranscriptionMeter } from './audio-meters.js'
import { createFeatureReader, worstFeatureUsage } from './feature-usage.js'
import { createImageMeter } from './image-meter.js'
import { createJobMeter, createJobPollMeter } from './job-meter.js'
import type { Meter, MeterInput } from './meter-types.js'
import type { ChunkFilter } from './usage-chunk-filter.js'
import { estimateUsage } from './estimate.js'
import { tokenDialect } from './token-dialects.js'
import { createTokenMeter } from './token-meter.js'
import { emptyUsage, tokenUsage, type Usage } from './usage.js'

export type { Meter, MeterInput, RequestFacts } from './meter-types.js'

const ONE_CALL: Usage = { ...emptyUsage(), calls: 1, reported: true }

function fixedMeter (usage: Usage): Meter {
  return { onChunk: () => {}, finish: () => ({ ...usage }) }
}

function meterFor (input: MeterInput): Meter {
  const spec = input.meter
  switch (spec.kind) {
    case 'tokens': {
      const features = input.features !== undefined && input.features.length > 0 ? createFeatureReader(spec.dialect, input.features) : null
      return createTokenMeter(tokenDialect(spec.dialect, input.usagePaths), input, features)
    }
    case 'images': return createImageMeter(input, spec.perCall)
    case 'transcription': return createTranscriptionMeter(input)
    case 'speech': return createSpeechMeter(input)
    // The upstream answered (2xx): that answer is the one call billed.
    case 'call': return fixedMeter(ONE_CALL)
    case 'job': return createJobMeter()
    case 'job_poll': return createJobPollMeter()
    case 'none': return fixedMeter(emptyUsage())
  }
}

/** What is billed when a meter itself failed: the request's estimate, marked as such. */
function fallbackUsage (input: MeterInput): Usage {
  const spec = input.meter
  const usage = tokenUsage(undefined, estimateUsage(spec.kind === 'tokens' ? spec.dialect : 'generic', input.request, input.estimate, 0))
  if ((spec.kind === 'images' && spec.perCall) || spec.kind === 'call') usage.calls = 1
  if (spec.kind === 'job') usage.jobs = 1
  return usage
}

/** Every feature the request used has its uses: the worst case where the meter could not read them. */
function withAllFeatures (usage: Usage, input: MeterInput): Usage {
  const features = input.features
  if (features === undefined || features.length === 0 || usage.features !== undefined) return usage
  return { ...usage, features: worstFeatureUsage(features) }
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
  // One literal of fixed properties, the job's fields set when the usage is: a spread and two
  // getters in the literal made every meter through the runtime's slow path (3.5 µs a request
  // at 50 connections, cpu-prof, 2026-11-27).
  const meter: { filter: ChunkFilter | undefined, onChunk (chunk: Buffer): void, finish (): Usage, jobId: string | undefined, jobStatus: string | undefined } = {
    filter,
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
        result = withAllFeatures(inner ? inner.finish() : fallbackUsage(input), input)
      } catch {
        inner = undefined
        result = withAllFeatures(fallbackUsage(input), input)
      }
      meter.jobId = inner?.jobId
      meter.jobStatus = inner?.jobStatus
      return { ...result }
    },
    jobId: undefined,
    jobStatus: undefined
  }
  return meter
}
