// Per-key quotas and caps, counted in the same transaction as the wallet hold (both stores).
// A key with any cap reserves its hold amount (and, for image operations, its image count) in
// usage buckets when the hold is placed; the settle moves the hold's reservation to `used`
// (the amount actually posted) and a release or expiry gives it all back. Buckets:
//   total  / ''          lifetime spend (the quota)
//   spend  / YYYY-MM-DD  spend of one local day in the key's IANA zone (daily cap; the 30-day
//                        cap is the sum of the last 30 local-day buckets)
//   images / YYYY-MM-DD  images of one UTC day (daily image cap)

/** The caps a hold is checked against; absent on holds of keys without any cap. */
export interface HoldCaps {
  keyId: string
  /** IANA zone of the key: its daily and 30-day caps count local days. */
  timezone: string
  quota: bigint | null
  dailySpendCap: bigint | null
  monthlySpendCap: bigint | null
  dailyImageCap: number | null
  /** Images this request asks for (0 unless its operation is metered in images). */
  images: number
}

/** Which cap refused a hold. */
export type CapRefusal = 'quota' | 'daily_spend_cap' | 'monthly_spend_cap' | 'daily_image_cap'

/** Days in the rolling spend window of `monthly_spend_cap`. */
export const SPEND_WINDOW_DAYS = 30

const formatters = new Map<string, Intl.DateTimeFormat>()

function formatterOf (timeZone: string): Intl.DateTimeFormat {
  let f = formatters.get(timeZone)
  if (!f) {
    f = new Intl.DateTimeFormat('en-CA', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit' })
    formatters.set(timeZone, f)
  }
  return f
}

/** The calendar day (YYYY-MM-DD) of `at` in `timeZone`. */
export function localDay (at: number, timeZone: string): string {
  return formatterOf(timeZone).format(at)
}

/** The UTC day (YYYY-MM-DD) of `at`. */
export function utcDay (at: number): string {
  return new Date(at).toISOString().slice(0, 10)
}

/** `day` moved by `delta` calendar days. */
export function addDays (day: string, delta: number): string {
  return new Date(Date.parse(`${day}T00:00:00Z`) + delta * 86_400_000).toISOString().slice(0, 10)
}

const offsetFormatters = new Map<string, Intl.DateTimeFormat>()

/** Milliseconds the zone's wall clock is ahead of UTC at `at`. */
function zoneOffset (at: number, timeZone: string): number {
  let f = offsetFormatters.get(timeZone)
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', { timeZone, hourCycle: 'h23', year: 'numeric', month: 'numeric', day: 'numeric', hour: 'numeric', minute: 'numeric', second: 'numeric' })
    offsetFormatters.set(timeZone, f)
  }
  const p: Record<string, number> = {}
  for (const part of f.formatToParts(at)) if (part.type !== 'literal') p[part.type] = Number(part.value)
  const wall = Date.UTC(p.year ?? 0, (p.month ?? 1) - 1, p.day ?? 1, p.hour ?? 0, p.minute ?? 0, p.second ?? 0)
  return wall - Math.floor(at / 1000) * 1000
}

/** The instant of 00:00 at the start of local `day` in `timeZone`. */
export function startOfLocalDay (day: string, timeZone: string): Date {
  const wall = Date.parse(`${day}T00:00:00Z`)
  let at = wall - zoneOffset(wall, timeZone)
  at = wall - zoneOffset(at, timeZone)
  return new Date(at)
}

/** The periods a capped hold placed at `at` reserves in. */
export interface CapPeriods {
  /** Local day in the key's zone. */
  day: string
  /** First local day of the 30-day window. */
  windowFrom: string
  /** UTC day (images). */
  imageDay: string
}

export function capPeriods (at: number, timeZone: string): CapPeriods {
  const day = localDay(at, timeZone)
  return { day, windowFrom: addDays(day, 1 - SPEND_WINDOW_DAYS), imageDay: utcDay(at) }
}

/** Usage (used + held) the decision reads. */
export interface CapUsage {
  total: bigint
  day: bigint
  window: bigint
  images: number
}

/** The first cap the hold would exceed, or null when it fits them all. */
export function capRefusal (caps: HoldCaps, amount: bigint, usage: CapUsage): CapRefusal | null {
  if (caps.quota !== null && usage.total + amount > caps.quota) return 'quota'
  if (caps.dailySpendCap !== null && usage.day + amount > caps.dailySpendCap) return 'daily_spend_cap'
  if (caps.monthlySpendCap !== null && usage.window + amount > caps.monthlySpendCap) return 'monthly_spend_cap'
  if (caps.dailyImageCap !== null && caps.images > 0 && usage.images + caps.images > caps.dailyImageCap) return 'daily_image_cap'
  return null
}

/** One usage row read back for the decision. */
export interface UsageRow { kind: string, period: string, amount: bigint }

/** Sums the rows of a key (kind total, spend days of the window, images of the UTC day). */
export function usageOf (rows: Iterable<UsageRow>, periods: CapPeriods): CapUsage {
  const usage: CapUsage = { total: 0n, day: 0n, window: 0n, images: 0 }
  for (const r of rows) {
    if (r.kind === 'total') usage.total += r.amount
    else if (r.kind === 'spend' && r.period >= periods.windowFrom && r.period <= periods.day) {
      usage.window += r.amount
      if (r.period === periods.day) usage.day += r.amount
    } else if (r.kind === 'images' && r.period === periods.imageDay) usage.images += Number(r.amount)
  }
  return usage
}

/** A key has caps when any of its four limits is set. */
export function hasCaps (key: { quota: bigint | null, dailySpendCap: bigint | null, monthlySpendCap: bigint | null, dailyImageCap: number | null }): boolean {
  return key.quota !== null || key.dailySpendCap !== null || key.monthlySpendCap !== null || key.dailyImageCap !== null
}
