// Per-model facts about what a provider accepts in a JSON body, declared on a model's operation
// in gateway.yaml and applied to the bytes sent upstream. Frameworks choose request fields from
// the model id they are given; ours carry a provider prefix (`openai/gpt-image-1`), so a
// framework can take them for models it does not know and send what the provider refuses for
// the real one (`response_format` to gpt-image-1, a `max_tokens` above Claude's limit). The
// edits are byte splices, like the model rewrite: every other byte stays as the client sent it.
import type { BodyRules } from '../shapes/index.js'
import { keyName, objectLayout, skipSpace, splice, type Member, type ObjectLayout } from './json-bytes.js'

/** Where output-token limits live in each family's body (the worst-case hold reads the same places). */
const TOP_LEVEL_LIMITS: ReadonlySet<string> = new Set(['max_tokens', 'max_completion_tokens', 'max_output_tokens'])
const NESTED_LIMITS: ReadonlyMap<string, string> = new Map([['generationConfig', 'maxOutputTokens'], ['generation_config', 'max_output_tokens']])

function topLevel (raw: Buffer): ObjectLayout | null {
  const open = skipSpace(raw, 0)
  const layout = objectLayout(raw, open)
  if (!layout || skipSpace(raw, layout.close + 1) !== raw.length) return null
  return layout
}

/** The byte range that removes member `i` together with one comma next to it. */
function memberRange (layout: ObjectLayout, i: number): [number, number] | null {
  const m = layout.members[i]
  if (m === undefined) return null
  const next = layout.members[i + 1]
  if (next !== undefined) return [m.keyStart, next.keyStart]
  const prev = layout.members[i - 1]
  return [prev === undefined ? m.keyStart : prev.valueEnd, m.valueEnd]
}

/** One member at a time, re-reading the layout after each splice, so ranges never overlap. */
function dropMembers (raw: Buffer, names: ReadonlySet<string>): Buffer | null {
  let out = raw
  let changed = false
  for (;;) {
    const layout = topLevel(out)
    if (!layout) return changed ? out : null
    const at = layout.members.findIndex((m) => names.has(keyName(m.key) ?? ''))
    const range = at === -1 ? null : memberRange(layout, at)
    if (!range) return changed ? out : null
    out = splice(out, range[0], range[1], '')
    changed = true
  }
}

/** A JSON integer literal above `cap` (a decimal or exponent literal is left to the provider). */
function above (raw: Buffer, m: Member, cap: number): boolean {
  const text = raw.toString('latin1', m.valueStart, m.valueEnd)
  return /^\d{1,30}$/.test(text) && BigInt(text) > BigInt(cap)
}

function limitMembers (raw: Buffer, layout: ObjectLayout, cap: number): Member[] {
  const found: Member[] = []
  for (const m of layout.members) {
    const name = keyName(m.key) ?? ''
    if (TOP_LEVEL_LIMITS.has(name) && above(raw, m, cap)) found.push(m)
    const inner = NESTED_LIMITS.get(name)
    if (inner === undefined) continue
    const nested = objectLayout(raw, m.valueStart)
    for (const n of nested?.members ?? []) if (keyName(n.key) === inner && above(raw, n, cap)) found.push(n)
  }
  return found
}

/** Every output-token limit above `cap` (duplicates included: parsers differ on which they keep) set to `cap`. */
function capLimits (raw: Buffer, cap: number): Buffer | null {
  const layout = topLevel(raw)
  if (!layout) return null
  const members = limitMembers(raw, layout, cap).sort((a, b) => b.valueStart - a.valueStart)
  if (members.length === 0) return null
  let out = raw
  for (const m of members) out = splice(out, m.valueStart, m.valueEnd, String(cap))
  return out
}

/** The body with the rules applied, or null when they change nothing (or it is not a JSON object). */
export function applyBodyRules (raw: Buffer, rules: BodyRules): Buffer | null {
  const dropped = rules.dropFields.size > 0 ? dropMembers(raw, rules.dropFields) : null
  const body = dropped ?? raw
  const capped = rules.maxOutputTokens === undefined ? null : capLimits(body, rules.maxOutputTokens)
  return capped ?? dropped
}
