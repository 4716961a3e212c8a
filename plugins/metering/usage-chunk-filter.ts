// Passes a chat-completions SSE stream through byte for byte, except the usage-only chunk
// (`choices: []` with a `usage` object) that the gateway asked for on the client's behalf.
// Each event is held only until its blank line arrives, then sent on or dropped whole; an
// event too big to be that small chunk is streamed through without being held.

import { Transform, type TransformCallback } from 'node:stream'
import { eventJson, isRecord } from './body-reader.js'
import { createSseParser } from './sse.js'

const LF = 0x0a
const CR = 0x0d
const USAGE_KEY = Buffer.from('"usage"')
const CHOICES_KEY = Buffer.from('"choices"')
/** A usage chunk is a few hundred bytes; an event bigger than this is never held. */
const MAX_HELD_BYTES = 64 * 1024

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

/** Whether the raw bytes of one SSE event are the usage-only chat-completions chunk. */
export function isUsageOnlyEvent (raw: Buffer): boolean {
  // Every chunk of a stream that asked for usage carries `"usage": null`: only an event with
  // an empty `choices` array is worth parsing.
  if (raw.indexOf(USAGE_KEY) === -1 || !hasEmptyChoices(raw)) return false
  let data: string | undefined
  const parser = createSseParser((e) => { data = e.data })
  parser.push(raw)
  parser.end()
  const json = data === undefined ? undefined : eventJson(data)
  return json !== undefined && Array.isArray(json.choices) && json.choices.length === 0 && isRecord(json.usage)
}

/** The filter as plain functions: each upstream chunk in, the bytes to send on out. */
export interface ChunkFilter {
  push (chunk: Buffer): Buffer[]
  end (): Buffer[]
}

export function createUsageEventFilter (): ChunkFilter {
  let held: Buffer[] = []
  let heldBytes = 0
  let passing = false // the event in progress is too big: its bytes go straight through
  let lineOpen = false // the line in progress has bytes
  let crPending = false // the last chunk ended with CR: a leading LF is part of that line end
  let crEndedEvent = false // ... and that line was the blank line closing an event
  let lastDropped = false

  const take = (piece: Buffer, out: Buffer[]): void => {
    if (piece.length === 0) return
    if (passing) { out.push(piece); return }
    held.push(piece)
    heldBytes += piece.length
    if (heldBytes > MAX_HELD_BYTES) {
      out.push(...held)
      held = []
      heldBytes = 0
      passing = true
    }
  }

  const closeEvent = (out: Buffer[]): void => {
    if (passing) {
      lastDropped = false
    } else {
      const raw = held.length === 1 ? held[0] as Buffer : Buffer.concat(held, heldBytes)
      lastDropped = isUsageOnlyEvent(raw)
      if (!lastDropped) out.push(raw)
    }
    held = []
    heldBytes = 0
    passing = false
  }

  return {
    push (chunk: Buffer): Buffer[] {
      const n = chunk.length
      const out: Buffer[] = []
      if (n === 0) return out
      let pos = 0
      if (crPending) {
        crPending = false
        if (chunk[0] === LF) {
          pos = 1
          if (!crEndedEvent) take(chunk.subarray(0, 1), out)
          else if (!lastDropped) out.push(chunk.subarray(0, 1))
        }
      }
      let from = pos // start of the bytes not yet taken
      let cr = chunk.indexOf(CR, pos)
      while (pos < n) {
        const lf = chunk.indexOf(LF, pos)
        if (cr !== -1 && cr < pos) cr = chunk.indexOf(CR, pos)
        if (lf === -1 && cr === -1) { lineOpen = true; break }
        const t = cr !== -1 && (lf === -1 || cr < lf) ? cr : lf
        let end = t + 1
        if (t === cr) {
          if (t + 1 === n) crPending = true
          else if (chunk[t + 1] === LF) end = t + 2
        }
        const blank = !lineOpen && t === pos
        lineOpen = false
        pos = end
        if (blank) {
          take(chunk.subarray(from, end), out)
          from = end
          closeEvent(out)
          if (crPending) crEndedEvent = true
        } else if (crPending) {
          crEndedEvent = false
        }
      }
      take(chunk.subarray(from, n), out)
      return out
    },
    end (): Buffer[] {
      const out: Buffer[] = []
      if (held.length > 0) closeEvent(out)
      return out
    }
  }
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
