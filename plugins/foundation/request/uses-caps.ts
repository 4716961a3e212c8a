// Forwards the caps a hold counted for hosted tools the provider runs per use, when the request
// set none: a response's `max_tool_calls`, an Anthropic server tool's `max_uses`. Without one
// the provider uses the tool as often as the model asks, while the hold counted a default (10
// searches): the provider must hear the cap that was paid for. Byte splices, like the model
// rewrite: every other byte stays as the client sent it. Which caps to set is decided from the
// request's features (plugins/foundation/operations/uses-caps.ts); this file only edits bytes.
import { keyName, lastMember, objectLayout, skipSpace, splice, valueEnd } from './json-bytes.js'

/** The caps to set: absent (or null) in the body, each the value the hold counted. */
export interface CapEdits {
  /** Top-level parameters: name → value. */
  readonly params: ReadonlyMap<string, number>
  /** Entries of a top-level list that get a field: the list, the entry's index, the field, the value. */
  readonly entries: ReadonlyArray<{ readonly list: string, readonly index: number, readonly field: string, readonly value: number }>
}

interface Splice { start: number, end: number, text: string }

/** Sets `name` to `value` in the object whose `{` is at `open`: every member of that name (parsers differ on duplicates), else a new first member. */
function setMember (raw: Buffer, open: number, name: string, value: number, out: Splice[]): boolean {
  const layout = objectLayout(raw, open)
  if (!layout) return false
  const named = layout.members.filter((m) => keyName(m.key) === name)
  for (const m of named) out.push({ start: m.valueStart, end: m.valueEnd, text: String(value) })
  if (named.length === 0) out.push({ start: open + 1, end: open + 1, text: `${JSON.stringify(name)}:${value}${layout.members.length > 0 ? ',' : ''}` })
  return true
}

/** The `{` of each entry of the array whose `[` is at `open`, by index (non-object entries left out). */
function entryStarts (raw: Buffer, open: number): Map<number, number> | null {
  const starts = new Map<number, number>()
  if (raw[open] !== 0x5b) return null
  let i = skipSpace(raw, open + 1)
  for (let index = 0; raw[i] !== 0x5d; index++) {
    const end = valueEnd(raw, i)
    if (end === -1) return null
    if (raw[i] === 0x7b) starts.set(index, i)
    i = skipSpace(raw, end)
    if (raw[i] === 0x2c) i = skipSpace(raw, i + 1)
    else if (raw[i] !== 0x5d) return null
  }
  return starts
}

/** The body with the caps set, or null when there is nothing to set or it is not a JSON object. */
export function applyCapEdits (raw: Buffer, edits: CapEdits): Buffer | null {
  const open = skipSpace(raw, 0)
  const layout = objectLayout(raw, open)
  if (!layout || skipSpace(raw, layout.close + 1) !== raw.length) return null
  const splices: Splice[] = []
  for (const [name, value] of edits.params) setMember(raw, open, name, value, splices)
  const listStarts = new Map<string, Map<number, number> | null>()
  for (const e of edits.entries) {
    if (!listStarts.has(e.list)) {
      const list = lastMember(layout, e.list)
      listStarts.set(e.list, list === undefined ? null : entryStarts(raw, list.valueStart))
    }
    const at = listStarts.get(e.list)?.get(e.index)
    if (at !== undefined) setMember(raw, at, e.field, e.value, splices)
  }
  if (splices.length === 0) return null
  // From the end, so earlier offsets stay valid (insertions at one offset keep their order).
  splices.sort((a, b) => b.start - a.start)
  let out = raw
  for (const s of splices) out = splice(out, s.start, s.end, s.text)
  return out
}
