// Validation of API key settings as they arrive from the admin or console API
// (snake_case JSON). Pure: tiers, models and "now" come in through the context.
import { MONEY_SCALE } from '../pricing/money.js'
import type { KeyFields, KeyPatch } from './types.js'

export interface KeyInputContext {
  /** Rate-limit tiers from gateway.yaml `limits.tiers`. */
  tiers: Readonly<Record<string, { rank: number }>>
  /** Tier of the account that owns the key; a key policy may not rank above it. */
  accountTier: string
  /** Model ids of the catalogue. */
  knownModels: ReadonlySet<string>
  /** expires_at must be after this; default the current time. */
  now?: Date
  /** Decimal places between a currency unit and its minor unit; default DEFAULT_MINOR_UNIT_DIGITS. */
  minorUnitDigits?: number
}

export type KeyInputError =
  | { code: 'AUTH_API_KEY_CONFIGURATION_INVALID'; field: string; reason: string }
  | { code: 'LIMIT_API_KEY_POLICY_NOT_ALLOWED'; field: 'rate_limit_policy'; reason: string }

export type KeyInputResult<T> = { ok: true; value: T } | ({ ok: false } & KeyInputError)

export type NewKeyFields = Partial<KeyFields> & Pick<KeyFields, 'name'>

/** Money in the API is a decimal string in account currency; inside it is nano-units (see plugins/foundation/pricing/money.ts). */
export const DEFAULT_MINOR_UNIT_DIGITS = MONEY_SCALE

export const KEY_INPUT_FIELDS = [
  'name', 'expires_at', 'allowed_models', 'active', 'timezone', 'quota', 'daily_spend_cap',
  'monthly_spend_cap', 'daily_image_cap', 'tags', 'rate_limit_policy',
] as const

const MAX_NAME = 100
const MAX_TAGS = 20
const TAG = /^[A-Za-z0-9_.:-]{1,64}$/
// eslint-disable-next-line no-control-regex -- finding control characters is this pattern's job
const CONTROL = /[\u0000-\u001f\u007f]/
const ISO_DATE =
  /^(\d{4})-(\d{2})-(\d{2})(?:T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:\d{2}))?$/
const DECIMAL = /^(\d+)(?:\.(\d+))?$/
// Intl also accepts offsets like "+05:00"; the spec asks for IANA names only.
const ZONE_NAME = /^[A-Za-z][A-Za-z0-9_+\-/]{0,63}$/
const INT64_MAX = 2n ** 63n - 1n
const INT32_MAX = 2 ** 31 - 1

type Parsed<T> = { ok: true; value: T } | { ok: false; reason: string }
const ok = <T>(value: T): Parsed<T> => ({ ok: true, value })
const bad = (reason: string): { ok: false; reason: string } => ({ ok: false, reason })

function parseName (v: unknown): Parsed<string> {
  if (typeof v !== 'string') return bad('must be a string')
  const name = v.trim()
  if (name === '') return bad('must not be empty')
  if ([...name].length > MAX_NAME) return bad(`must be at most ${MAX_NAME} characters`)
  if (CONTROL.test(name)) return bad('must not contain control characters')
  return ok(name)
}

function parseExpiry (v: unknown, now: Date): Parsed<Date> {
  if (typeof v !== 'string') return bad('must be an ISO 8601 date string')
  const m = ISO_DATE.exec(v)
  const at = Date.parse(v)
  if (!m || Number.isNaN(at)) return bad('must be an ISO 8601 date with a time zone, e.g. 2030-01-31T00:00:00Z')
  // Date.parse rolls 2030-02-30 over to March instead of refusing it.
  const [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])]
  const day = new Date(Date.UTC(y, mo - 1, d))
  if (day.getUTCFullYear() !== y || day.getUTCMonth() !== mo - 1 || day.getUTCDate() !== d) {
    return bad('is not a calendar date')
  }
  if (at <= now.getTime()) return bad('must be in the future')
  return ok(new Date(at))
}

function parseModels (v: unknown, known: ReadonlySet<string>): Parsed<string[]> {
  if (!Array.isArray(v)) return bad('must be an array of model ids or null')
  if (v.length === 0) return bad('must list at least one model, or be null for all models')
  const seen = new Set<string>()
  for (const id of v) {
    if (typeof id !== 'string') return bad('must contain only model id strings')
    if (!known.has(id)) return bad(`unknown model ${JSON.stringify(id)}`)
    if (seen.has(id)) return bad(`duplicate model ${JSON.stringify(id)}`)
    seen.add(id)
  }
  return ok([...seen])
}

function parseZone (v: unknown): Parsed<string> {
  if (typeof v !== 'string' || !ZONE_NAME.test(v)) return bad('must be an IANA time zone name, e.g. Europe/Paris')
  try {
    // The constructor throws a RangeError for a zone this runtime does not know.
    Intl.DateTimeFormat('en-US', { timeZone: v })
  } catch {
    return bad(`unknown time zone ${JSON.stringify(v)}`)
  }
  return ok(v)
}

function parseMoney (v: unknown, digits: number): Parsed<bigint> {
  if (typeof v !== 'string') return bad('must be a decimal string such as "25.00" (numbers lose precision)')
  const m = DECIMAL.exec(v)
  if (!m) return bad('must be a non-negative decimal string such as "25.00"')
  const whole = m[1] ?? '0'
  const fraction = m[2] ?? ''
  if (fraction.length > digits) return bad(`must have at most ${digits} decimal places`)
  const minor = BigInt(whole) * 10n ** BigInt(digits) + BigInt(fraction.padEnd(digits, '0') || '0')
  if (minor > INT64_MAX) return bad('is too large')
  return ok(minor)
}

function parseImageCap (v: unknown): Parsed<number> {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v > INT32_MAX) {
    return bad('must be a non-negative integer')
  }
  return ok(v)
}

function parseTags (v: unknown): Parsed<string[]> {
  if (!Array.isArray(v)) return bad('must be an array of strings')
  if (v.length > MAX_TAGS) return bad(`must have at most ${MAX_TAGS} tags`)
  const seen = new Set<string>()
  for (const tag of v) {
    if (typeof tag !== 'string' || !TAG.test(tag)) return bad('each tag must be 1..64 characters of A-Z a-z 0-9 _ . : -')
    if (seen.has(tag)) return bad(`duplicate tag ${JSON.stringify(tag)}`)
    seen.add(tag)
  }
  return ok([...seen])
}

function invalid (field: string, reason: string): KeyInputResult<never> {
  return { ok: false, code: 'AUTH_API_KEY_CONFIGURATION_INVALID', field, reason }
}

type FieldName = (typeof KEY_INPUT_FIELDS)[number]
const NULLABLE = new Set<FieldName>([
  'expires_at', 'allowed_models', 'quota', 'daily_spend_cap', 'monthly_spend_cap', 'daily_image_cap', 'rate_limit_policy',
])

function validate (input: unknown, ctx: KeyInputContext, requireName: boolean): KeyInputResult<KeyPatch> {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) return invalid('body', 'must be a JSON object')
  const body = new Map(Object.entries(input))
  for (const field of body.keys()) {
    // Unknown fields fail loudly: a misspelt "allowed_model" must not leave a key unrestricted.
    if (!(KEY_INPUT_FIELDS as readonly string[]).includes(field)) return invalid(field, 'unknown field')
  }
  if (requireName && body.get('name') === undefined) return invalid('name', 'is required')
  const out: KeyPatch = {}
  const digits = ctx.minorUnitDigits ?? DEFAULT_MINOR_UNIT_DIGITS
  const now = ctx.now ?? new Date()

  for (const field of KEY_INPUT_FIELDS) {
    const raw = body.get(field)
    if (raw === undefined) continue
    if (raw === null) {
      if (!NULLABLE.has(field)) return invalid(field, 'must not be null')
      setNull(field, out)
      continue
    }
    const step = parseField(field, raw, ctx, digits, now, out)
    if (!step.ok) return invalid(field, step.reason)
  }

  const policy = out.rateLimitPolicy
  if (policy) {
    const keyRank = ctx.tiers[policy]?.rank ?? Infinity
    // An account on a tier the config no longer knows may bind nothing: fail closed.
    const accountTier = Object.hasOwn(ctx.tiers, ctx.accountTier) ? ctx.tiers[ctx.accountTier] : undefined
    const accountRank = accountTier?.rank ?? -Infinity
    if (keyRank > accountRank) {
      return {
        ok: false,
        code: 'LIMIT_API_KEY_POLICY_NOT_ALLOWED',
        field: 'rate_limit_policy',
        reason: `policy ${JSON.stringify(policy)} ranks above the account tier ${JSON.stringify(ctx.accountTier)}`,
      }
    }
  }
  return { ok: true, value: out }
}

function parseField (
  field: FieldName,
  raw: unknown,
  ctx: KeyInputContext,
  digits: number,
  now: Date,
  out: KeyPatch
): Parsed<unknown> {
  const into = <T>(step: Parsed<T>, set: (v: T) => void): Parsed<unknown> => {
    if (step.ok) set(step.value)
    return step
  }
  switch (field) {
    case 'name': return into(parseName(raw), (v) => (out.name = v))
    case 'expires_at': return into(parseExpiry(raw, now), (v) => (out.expiresAt = v))
    case 'allowed_models': return into(parseModels(raw, ctx.knownModels), (v) => (out.allowedModels = v))
    case 'active': return typeof raw === 'boolean' ? into(ok(raw), (v) => (out.active = v)) : bad('must be true or false')
    case 'timezone': return into(parseZone(raw), (v) => (out.timezone = v))
    case 'quota': return into(parseMoney(raw, digits), (v) => (out.quota = v))
    case 'daily_spend_cap': return into(parseMoney(raw, digits), (v) => (out.dailySpendCap = v))
    case 'monthly_spend_cap': return into(parseMoney(raw, digits), (v) => (out.monthlySpendCap = v))
    case 'daily_image_cap': return into(parseImageCap(raw), (v) => (out.dailyImageCap = v))
    case 'tags': return into(parseTags(raw), (v) => (out.tags = v))
    case 'rate_limit_policy':
      if (typeof raw !== 'string') return bad('must be a tier name or null')
      if (!Object.hasOwn(ctx.tiers, raw)) return bad(`unknown tier ${JSON.stringify(raw)}`)
      return into(ok(raw), (v) => (out.rateLimitPolicy = v))
  }
}

function setNull (field: FieldName, out: KeyPatch): void {
  switch (field) {
    case 'expires_at': out.expiresAt = null; break
    case 'allowed_models': out.allowedModels = null; break
    case 'quota': out.quota = null; break
    case 'daily_spend_cap': out.dailySpendCap = null; break
    case 'monthly_spend_cap': out.monthlySpendCap = null; break
    case 'daily_image_cap': out.dailyImageCap = null; break
    case 'rate_limit_policy': out.rateLimitPolicy = null; break
    default: break
  }
}

/** Settings of a new key: `name` required, the rest optional (null = not set). */
export function validateKeyInput (input: unknown, ctx: KeyInputContext): KeyInputResult<NewKeyFields> {
  const result = validate(input, ctx, true)
  if (!result.ok) return result
  const { name } = result.value
  if (name === undefined) return invalid('name', 'is required')
  return { ok: true, value: { ...result.value, name } }
}

/** A PATCH of an existing key: every field optional; null clears a nullable field. */
export function validateKeyPatch (input: unknown, ctx: KeyInputContext): KeyInputResult<KeyPatch> {
  return validate(input, ctx, false)
}
