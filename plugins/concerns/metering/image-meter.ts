import { createBodyReader, eventJson, isRecord, parseCaptured } from './body-reader.js'
import type { Meter, MeterInput, RequestFacts } from './meter-types.js'
import { renderedTier } from '../../foundation/pricing/image-tier.js'
import { requestChars } from './request-text.js'
import { responsesUsage } from './token-dialects.js'
import { emptyUsage, sanitizeCount, tokensFromChars, tokenUsage, type Usage } from './usage.js'

/**
 * Output tokens assumed per image when a token-billed image model's report is missing or not
 * believable: gpt-image-1 at medium quality, 1024×1024.
 */
export const ESTIMATED_IMAGE_OUTPUT_TOKENS = 1056

const IMAGE_ARRAYS: ReadonlySet<string> = new Set(['data', 'predictions'])
/** An item holding one of these is an image; a filtered prediction holds none. */
const IMAGE_PRESENT: ReadonlySet<string> = new Set(['b64_json', 'url', 'bytesBase64Encoded', 'gcsUri'])
const CAPTURE: ReadonlySet<string> = new Set(['usage', 'error', 'quality', 'size'])

/** Images the request asked for: `n`, or Imagen's `parameters.sampleCount`; 1 by default. */
export function requestedImages (request: RequestFacts): number {
  const json = request.json
  const params = json?.parameters
  const asked = json?.n ?? (isRecord(params) ? params.sampleCount ?? params.numberOfImages : undefined) ?? request.multipartFields?.n
  const n = typeof asked === 'string' ? Number(asked) : asked
  return sanitizeCount('images', n) ?? 1
}

export interface ImageFacts {
  images: number
  /** The image count comes from a complete answer. */
  countReported: boolean
  /** The answer's `usage` value (token-billed image models), if any. */
  usage: unknown
  /** The answer is an error object. */
  errored: boolean
  /** The answer's `quality` and `size` (gpt-image models say what they rendered). */
  rendered?: { quality?: unknown, size?: unknown }
}

/** Usage of an image answer (pure). `perCall` adds the one call of a per-call operation. */
export function imageUsage (facts: ImageFacts, input: MeterInput, perCall: boolean): Usage {
  const usage = emptyUsage()
  if (facts.errored) return usage
  usage.images = sanitizeCount('images', facts.images) ?? 0
  usage.calls = perCall ? 1 : 0
  const asked = input.request.imageTier
  if (asked !== undefined) {
    usage.imageTier = renderedTier(facts.rendered ?? {}, asked) ?? asked.worst
  }
  const estimate = {
    inputTokens: tokensFromChars(requestChars(input.request)),
    outputTokens: usage.images * ESTIMATED_IMAGE_OUTPUT_TOKENS
  }
  if (facts.usage === undefined || facts.usage === null) {
    // dall-e and Imagen report no tokens: the image count is the whole report.
    if (input.unit === 'token') {
      Object.assign(usage, estimate)
      usage.reported = false
    } else {
      usage.reported = facts.countReported
    }
    return usage
  }
  const tokens = tokenUsage(responsesUsage(facts.usage), estimate)
  usage.inputTokens = tokens.inputTokens
  usage.outputTokens = tokens.outputTokens
  usage.cachedInputTokens = tokens.cachedInputTokens
  usage.reported = facts.countReported && tokens.reported
  return usage
}

/**
 * Counts returned images without holding them: `data[]` / `predictions[]` items are counted by
 * the streaming scan. Streamed gpt-image answers count their `*.completed` events.
 */
export function createImageMeter (input: MeterInput, perCall: boolean): Meter {
  let sseImages = 0
  let sseEvents = 0
  let sseUsage: unknown
  let sseRendered: { quality?: unknown, size?: unknown } = {}
  const reader = createBodyReader({
    sse: true,
    onEvent: (e) => {
      sseEvents++
      // Partial images are megabytes of base64 and bill nothing: only the final event is parsed.
      if (e.event !== null && !e.event.endsWith('.completed')) return
      const data = eventJson(e.data)
      const type = typeof data?.type === 'string' ? data.type : e.event ?? ''
      if (!data || !type.endsWith('.completed')) return
      sseImages++
      if (data.usage !== undefined) sseUsage = data.usage
      // Each completed event says what it rendered; the last one stands (one request, one tier).
      sseRendered = { quality: data.quality, size: data.size }
    },
    scan: { capture: CAPTURE, items: { arrays: IMAGE_ARRAYS, present: IMAGE_PRESENT } }
  })
  return {
    onChunk: (chunk) => reader.push(chunk),
    finish: (): Usage => {
      reader.end()
      const scan = reader.scan()
      const mode = reader.mode()
      let facts: ImageFacts
      if (scan && scan.root === 'object') {
        const captured = parseCaptured(scan.captured)
        facts = { images: scan.items, countReported: scan.complete, usage: captured.get('usage'), errored: isRecord(captured.get('error')), rendered: { quality: captured.get('quality'), size: captured.get('size') } }
      } else if (mode === 'sse' && sseEvents > 0) {
        facts = { images: sseImages, countReported: sseImages > 0, usage: sseUsage, errored: false, rendered: sseRendered }
      } else if (mode === 'unknown') {
        facts = { images: 0, countReported: false, usage: undefined, errored: false }
      } else {
        // Not an answer we can read: assume the request was served as asked.
        facts = { images: requestedImages(input.request), countReported: false, usage: undefined, errored: false }
      }
      return imageUsage(facts, input, perCall)
    }
  }
}
