// Encoding shared by both backends: usage as JSON, text clean-up, the page cursor.
import { InvalidCursorError } from './errors.js'
import type { RequestLogRow, RequestUsage } from './types.js'

/** Usage units and their snake_case names inside the stored JSON object. */
const USAGE_COLUMNS = {
  inputTokens: 'input_tokens',
  outputTokens: 'output_tokens',
  cachedInputTokens: 'cached_input_tokens',
  images: 'images',
  audioSeconds: 'audio_seconds',
  characters: 'characters',
  calls: 'calls',
  jobs: 'jobs',
} as const satisfies { readonly [U in keyof RequestUsage]-?: string }

const USAGE_UNITS = Object.keys(USAGE_COLUMNS) as Array<keyof RequestUsage>

export function usageToJson (usage: RequestUsage | null): string | null {
  if (usage === null) return null
  const out: Record<string, number> = {}
  for (const unit of USAGE_UNITS) out[USAGE_COLUMNS[unit]] = usage[unit]
  return JSON.stringify(out)
}

/** From the stored JSON (SQLite text or parsed PostgreSQL jsonb). */
export function usageFromJson (stored: unknown): RequestUsage | null {
  if (stored === null) return null
  const parsed: unknown = typeof stored === 'string' ? JSON.parse(stored) : stored
  if (typeof parsed !== 'object' || parsed === null) throw new Error('request_log.usage is not a JSON object')
  const usage: Partial<Record<keyof RequestUsage, number>> = {}
  for (const unit of USAGE_UNITS) {
    const value: unknown = Reflect.get(parsed, USAGE_COLUMNS[unit])
    if (typeof value !== 'number') throw new Error(`request_log.usage.${USAGE_COLUMNS[unit]} is not a number`)
    usage[unit] = value
  }
  return usage as RequestUsage
}

/**
 * PostgreSQL refuses NUL in text; client-chosen values (the requested model) may hold one.
 * Both backends store U+FFFD instead, so they return the same row.
 */
export function cleanText<T extends string | null> (value: T): T {
  return (value !== null && value.includes('\u0000') ? value.replaceAll('\u0000', '\uFFFD') : value) as T
}

/** The first row of each requestId, in order: the batch keeps the first duplicate. */
export function firstOfEachId (rows: readonly RequestLogRow[]): RequestLogRow[] {
  const seen = new Set<string>()
  const out: RequestLogRow[] = []
  for (const row of rows) {
    if (seen.has(row.requestId)) continue
    seen.add(row.requestId)
    out.push(row)
  }
  return out
}

export interface Cursor {
  createdAtMs: number
  requestId: string
}

/** Opaque to callers: base64url of `<createdAt ms>:<requestId>` of the last row of a page. */
export function encodeCursor (row: Pick<RequestLogRow, 'createdAt' | 'requestId'>): string {
  return Buffer.from(`${row.createdAt.getTime()}:${row.requestId}`, 'utf8').toString('base64url')
}

const CURSOR = /^(\d{1,15}):(.+)$/s

export function decodeCursor (cursor: string): Cursor {
  const m = /^[A-Za-z0-9_-]+$/.test(cursor) ? CURSOR.exec(Buffer.from(cursor, 'base64url').toString('utf8')) : null
  if (!m || m[1] === undefined || m[2] === undefined) throw new InvalidCursorError()
  return { createdAtMs: Number(m[1]), requestId: m[2] }
}
