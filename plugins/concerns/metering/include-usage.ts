// Chat-completions streams only end with a usage chunk when the request asks for one
// (`stream_options.include_usage`). The gateway needs that number to bill, so it asks on the
// client's behalf and hides the extra chunk from a client that did not ask (see
// usage-chunk-filter.ts). The request is edited at the byte level: re-serialising would
// reformat numbers (losing precision past 2^53) and whitespace of a body that is otherwise
// forwarded untouched.

import { lastMember, objectLayout, skipSpace, splice } from '../../foundation/request/json-bytes.js'

export { createUsageChunkFilter, createUsageEventFilter, isUsageOnlyEvent, type ChunkFilter } from './usage-chunk-filter.js'

const STREAM_OPTIONS = '"stream_options":{"include_usage":true}'
const INCLUDE_USAGE = '"include_usage":true'

function bytesEqual (buf: Buffer, start: number, end: number, text: string): boolean {
  return end - start === text.length && buf.toString('latin1', start, end) === text
}

/**
 * The request body with `stream_options.include_usage` set to true, or null when nothing is to
 * be done: the client already asked, the body is not a streaming request (`"stream": true`), or
 * it cannot be edited safely (not a JSON object, malformed, `stream_options` not an object).
 * Keys are matched as JSON.parse reads them, escapes included. Only after a non-null result should the answer go through
 * createUsageChunkFilter: a null means the client sees exactly what it asked for.
 */
export function injectIncludeUsage (raw: Buffer): Buffer | null {
  const open = skipSpace(raw, 0)
  const top = objectLayout(raw, open)
  if (!top || skipSpace(raw, top.close + 1) !== raw.length) return null
  const stream = lastMember(top, 'stream')
  if (!stream || !bytesEqual(raw, stream.valueStart, stream.valueEnd, 'true')) return null

  const options = lastMember(top, 'stream_options')
  if (!options) {
    // `{` + the new member + `,` when other members follow.
    return splice(raw, open + 1, open + 1, top.members.length > 0 ? `${STREAM_OPTIONS},` : STREAM_OPTIONS)
  }
  if (bytesEqual(raw, options.valueStart, options.valueEnd, 'null')) {
    return splice(raw, options.valueStart, options.valueEnd, `{${INCLUDE_USAGE}}`)
  }
  const inner = objectLayout(raw, options.valueStart)
  if (!inner) return null
  const include = lastMember(inner, 'include_usage')
  if (!include) {
    const at = options.valueStart + 1
    return splice(raw, at, at, inner.members.length > 0 ? `${INCLUDE_USAGE},` : INCLUDE_USAGE)
  }
  if (bytesEqual(raw, include.valueStart, include.valueEnd, 'true')) return null
  // false, or null / another value the upstream would not read as true.
  return splice(raw, include.valueStart, include.valueEnd, 'true')
}
