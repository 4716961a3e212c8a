// Which uses caps the provider must be told: the hold counts a per-use hosted tool at the
// request's cap (`max_tool_calls`, an entry's `max_uses`) or, without one, at the feature's
// declared default — a number the provider never hears of, and without a cap it uses the tool as
// often as the model asks. So each cap the request leaves unset (absent or null) is forwarded
// with the value the hold counted (request/uses-caps.ts edits the bytes). A request-wide
// parameter shared by several tools (`max_tool_calls` caps all built-in tool calls together)
// gets the smallest of their counts, which keeps every tool within its own.
import type { CapEdits } from '../request/uses-caps.js'
import { paramValue } from './billable-parameters.js'
import type { OperationFeatures } from './feature-compile.js'
import { entryMark, type FeatureUse } from './features.js'
import type { ParsedBody } from '../shapes/index.js'

const isRecord = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v)
const unset = (v: unknown): boolean => v === undefined || v === null

/** The caps to forward for the features a request uses, or null when it sets every one itself. */
export function capEdits (op: OperationFeatures, uses: readonly FeatureUse[], body: ParsedBody | undefined): CapEdits | null {
  if (body?.kind !== 'json' || uses.length === 0) return null
  const params = new Map<string, number>()
  for (const use of uses) {
    const cap = use.feature.uses
    if (cap === null || cap.param === null || cap.itemField !== null || cap.param.keys.length !== 1) continue
    if (!unset(paramValue(body, cap.param))) continue
    params.set(cap.param.name, Math.min(params.get(cap.param.name) ?? use.uses, use.uses))
  }
  const entries: Array<CapEdits['entries'][number]> = []
  for (const scan of op.lists) {
    if (scan.fieldKeys === null || scan.list.keys.length !== 1) continue
    const list = paramValue(body, scan.list)
    if (!Array.isArray(list)) continue
    list.forEach((entry: unknown, index) => {
      if (!isRecord(entry)) return
      const mark = entryMark(entry, scan.fieldKeys as readonly string[])
      const cap = mark === undefined ? undefined : scan.features.get(mark)?.uses
      if (cap === undefined || cap === null || cap.itemField === null || !unset(entry[cap.itemField])) return
      // What the hold counted for this entry (features.ts entryUses): the request's cap, else the default.
      const shared = cap.param === null ? undefined : paramValue(body, cap.param)
      const value = typeof shared === 'number' && Number.isSafeInteger(shared) && shared > 0 ? shared : cap.default
      entries.push({ list: scan.list.name, index, field: cap.itemField, value })
    })
  }
  return params.size === 0 && entries.length === 0 ? null : { params, entries }
}
