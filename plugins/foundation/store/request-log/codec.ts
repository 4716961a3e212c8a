// Encoding shared by both backends: usage as JSON, text clean-up, the page cursor.
import { InvalidCursorError } from './errors.js'
import type { FeatureReceipt, RequestLogRow, RequestUsage, UsageUnit } from './types.js'

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
} as const satisfies { readonly [U in UsageUnit]-?: string }

const USAGE_UNITS = Object.keys(USAGE_COLUMNS) as UsageUnit[]

export function usageToJson (usage: RequestUsage | null): string | null {
  if (usage === null) return null
  const out: Record<string, number | Record<string, FeatureReceipt>> = {}
  for (const unit of USAGE_UNITS) out[USAGE_COLUMNS[unit]] = usage[unit]
  if (usage.features !== undefined) {
    // Field by field: whatever else the caller's objects carry is never stored.
    const features: Record<string, FeatureReceipt> = {}
    for (const [name, f] of Object.entries(usage.features)) features[name] = { uses: f.uses, reported: f.reported, charge: f.charge, price: f.price }
    out.features = features
  }
  // Present only when the request wrote to the prompt cache or was priced by image tier: the receipt's inputs to the charge.
  const extra = out as Record<string, unknown>
  if (usage.cacheWriteTokens !== undefined) extra.cache_write_tokens = usage.cacheWriteTokens
  if (usage.cacheWrite1hTokens !== undefined) extra.cache_write_1h_tokens = usage.cacheWrite1hTokens
  if (usage.imageTier !== undefined) extra.image_tier = { quality: usage.imageTier.quality, size: usage.imageTier.size }
  return JSON.stringify(out)
}

const CHARGES: ReadonlySet<unknown> = new Set(['per_call', 'per_use', 'multiplier', 'tokens'])

function featuresFromJson (stored: unknown): Record<string, FeatureReceipt> {
  if (typeof stored !== 'object' || stored === null || Array.isArray(stored)) throw new Error('request_log.usage.features is not a JSON object')
  const out: Record<string, FeatureReceipt> = {}
  for (const [name, f] of Object.entries(stored as Record<string, unknown>)) {
    const r = f as Partial<Record<keyof FeatureReceipt, unknown>> | null
    if (r === null || typeof r.uses !== 'number' || typeof r.reported !== 'boolean' || !CHARGES.has(r.charge) || !(r.price === null || typeof r.price === 'string')) {
      throw new Error(`request_log.usage.features.${name} is malformed`)
    }
    out[name] = { uses: r.uses, reported: r.reported, charge: r.charge as FeatureReceipt['charge'], price: r.price }
  }
  return out
}

/** From the stored JSON (SQLite text or parsed PostgreSQL jsonb). */
export function usageFromJson (stored: unknown): RequestUsage | null {
  if (stored === null) return null
  const parsed: unknown = typeof stored === 'string' ? JSON.parse(stored) : stored
  if (typeof parsed !== 'object' || parsed === null) throw new Error('request_log.usage is not a JSON object')
  const usage: Partial<Record<UsageUnit, number>> = {}
  for (const unit of USAGE_UNITS) {
    const value: unknown = Reflect.get(parsed, USAGE_COLUMNS[unit])
    if (typeof value !== 'number') throw new Error(`request_log.usage.${USAGE_COLUMNS[unit]} is not a number`)
    usage[unit] = value
  }
  const features: unknown = Reflect.get(parsed, 'features')
  const out = usage as RequestUsage
  for (const [key, field] of [['cache_write_tokens', 'cacheWriteTokens'], ['cache_write_1h_tokens', 'cacheWrite1hTokens']] as const) {
    const v: unknown = Reflect.get(parsed, key)
    if (v === undefined) continue
    if (typeof v !== 'number') throw new Error(`request_log.usage.${key} is not a number`)
    out[field] = v
  }
  const tier: unknown = Reflect.get(parsed, 'image_tier')
  if (tier !== undefined) {
    const t = tier as { quality?: unknown, size?: unknown } | null
    if (t === null || typeof t.quality !== 'string' || typeof t.size !== 'string') throw new Error('request_log.usage.image_tier is malformed')
    out.imageTier = { quality: t.quality, size: t.size }
  }
  if (features !== undefined) out.features = featuresFromJson(features)
  return out
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
