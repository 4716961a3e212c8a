// Passes a chat-completions SSE stream through byte for byte, except the usage-only chunk
// (`choices: []` with a `usage` object) that the gateway asked for on the client's behalf.
// Each event is held only until its blank line arrives, then sent on (in as few pieces as the
// chunks allow) or dropped whole; an event too big to be that small chunk is streamed through
// without being held. The walk over the bytes is sse-tap.ts's.

import { Transform, type TransformCallback } from 'node:stream'
import { eventJson, isRecord } from './body-reader.js'
import { createSseParser } from './sse.js'
import { createSseTap } from './sse-tap.js'

const LF = 0x0a
const CR = 0x0d
const USAGE_KEY = Buffer.from('"usage"')
const CHOICES_KEY = Buffer.from('"choices"')
/** A usage chunk is a few hundred bytes; an event bigger than this is never held. */
export const USAGE_EVENT_MAX_BYTES = 64 * 1024

/** `"choices"` followed by an empty array, whatever the spacing. */
function hasEmptyChoices (raw: Buffer): boolean {
  for (let at = raw.indexOf(CHOICES_KEY); at !== -1; at = raw.indexOf(CHOICES_KEY, at + 1)) {
    let i = at + CHOICES_KEY.length
    while (raw[i] === 0x20 || raw[i] === 0x09) i++
    if (raw[i++] !== 0x3a) continue
    while (raw[i] === 0x20 || raw[i] === 0x09) i++
    if (raw[i++] !== 0x5b) continue
    while (raw[i] === 0x20 || raw[i] === 0x09 || raw[i] === LF || raw[i] === CR) i++
    if (raw[i] === 0x5d) return true
  }
  return false
}

/**
 * Whether the raw bytes of one SSE event are the usage-only chat-completions chunk. `parsed`
 * is the JSON of the event's (last) data when the caller has already read it (the meter has).
 */
export function isUsageOnlyEvent (raw: Buffer, parsed?: { json: Record<string, unknown> | undefined }): boolean {
  // Every chunk of a stream that asked for usage carries `"usage": null`: only an event with
  // an empty `choices` array is worth parsing.
  if (raw.indexOf(USAGE_KEY) === -1 || !hasEmptyChoices(raw)) return false
  let json: Record<string, unknown> | undefined
  if (parsed) {
    json = parsed.json
  } else {
    let data: string | undefined
    const parser = createSseParser((e) => { data = e.data })
    parser.push(raw)
    parser.end()
    json = data === undefined ? undefined : eventJson(data)
  }
  return json !== undefined && Array.isArray(json.choices) && json.choices.length === 0 && isRecord(json.usage)
}

/** The filter as plain functions: each upstream chunk in, the bytes to send on out. */
export interface ChunkFilter {
  push (chunk: Buffer): Buffer[]
  end (): Buffer[]
}

export function createUsageEventFilter (): ChunkFilter {
  // Only an event whose `usage` holds an object is a candidate; isUsageOnlyEvent decides.
  const tap = createSseTap({ textKeys: [], parseKeys: ['usage'], maxEventBytes: USAGE_EVENT_MAX_BYTES, drop: isUsageOnlyEvent })
  return { push: (chunk) => tap.push(chunk), end: () => tap.end() }
}

/** The same filter as a Transform stream. */
export function createUsageChunkFilter (): Transform {
  const filter = createUsageEventFilter()
  return new Transform({
    transform (chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
      for (const piece of filter.push(chunk)) this.push(piece)
      callback()
    },
    flush (callback: TransformCallback): void {
      for (const piece of filter.end()) this.push(piece)
      callback()
    }
  })
}
