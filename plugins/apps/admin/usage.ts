// A key's usage against each of its caps (GET /admin/v1/keys/{id}/usage) and the reset of its
// used quota (POST …/usage/reset). The buckets are the ledger's (plugins/foundation/store/ledger/caps.ts).
import { addDays, capPeriods, startOfLocalDay } from '../../foundation/store/ledger/index.js'
import type { KeyUsageRow } from '../../foundation/store/ledger/index.js'
import type { ApiKeyRecord } from '../../foundation/store/types.js'
import { formatMoney } from '../../foundation/pricing/money.js'
import { keyNotFound, type AdminContext } from '../../concerns/accounts/service.js'
import { createWallet } from '../../concerns/wallet/wallet.js'

export interface CapUsageView {
  cap: 'quota' | 'daily_spend_cap' | 'monthly_spend_cap' | 'daily_image_cap'
  /** The key's limit (money as a decimal string, images as a count); null: no such cap. */
  limit: string | number | null
  /** Posted spend (or images of posted requests) counted against the cap. */
  used: string | number
  /** Reserved by open holds (requests still running). */
  held: string | number
  /** When the count next drops: 00:00 local (daily), 00:00 UTC (images), the next local midnight
   * when the oldest day leaves the 30-day window; null for the lifetime quota (only a reset). */
  resets_at: string | null
}

export interface KeyUsageView {
  key_id: string
  timezone: string
  data: CapUsageView[]
}

function sum (rows: KeyUsageRow[], keep: (r: KeyUsageRow) => boolean): { used: bigint, held: bigint } {
  let used = 0n
  let held = 0n
  for (const r of rows) {
    if (!keep(r)) continue
    used += r.used
    held += r.held
  }
  return { used, held }
}

export function keyUsageView (key: ApiKeyRecord, rows: KeyUsageRow[], now: Date): KeyUsageView {
  const p = capPeriods(now.getTime(), key.timezone)
  const nextLocal = startOfLocalDay(addDays(p.day, 1), key.timezone).toISOString()
  const nextUtc = new Date(Date.parse(`${addDays(p.imageDay, 1)}T00:00:00Z`)).toISOString()
  const money = (v: bigint | null): string | null => (v === null ? null : formatMoney(v))
  const total = sum(rows, (r) => r.kind === 'total')
  const day = sum(rows, (r) => r.kind === 'spend' && r.period === p.day)
  const window = sum(rows, (r) => r.kind === 'spend' && r.period >= p.windowFrom && r.period <= p.day)
  const images = sum(rows, (r) => r.kind === 'images' && r.period === p.imageDay)
  return {
    key_id: key.id,
    timezone: key.timezone,
    data: [
      { cap: 'quota', limit: money(key.quota), used: formatMoney(total.used), held: formatMoney(total.held), resets_at: null },
      { cap: 'daily_spend_cap', limit: money(key.dailySpendCap), used: formatMoney(day.used), held: formatMoney(day.held), resets_at: nextLocal },
      { cap: 'monthly_spend_cap', limit: money(key.monthlySpendCap), used: formatMoney(window.used), held: formatMoney(window.held), resets_at: nextLocal },
      { cap: 'daily_image_cap', limit: key.dailyImageCap, used: Number(images.used), held: Number(images.held), resets_at: nextUtc },
    ],
  }
}

async function usageOf (ctx: AdminContext, key: ApiKeyRecord): Promise<KeyUsageView> {
  const now = ctx.now()
  const p = capPeriods(now.getTime(), key.timezone)
  // From the earlier of the window's first local day and the UTC day (the zones differ).
  const from = addDays(p.windowFrom < p.imageDay ? p.windowFrom : p.imageDay, -1)
  return keyUsageView(key, await ctx.store.ledger.keyUsage(key.id, from), now)
}

export async function getKeyUsage (ctx: AdminContext, id: string): Promise<KeyUsageView> {
  const key = await ctx.store.keys.get(id)
  if (!key) throw keyNotFound()
  return await usageOf(ctx, key)
}

/**
 * Sets every used count of the key to 0 (lifetime quota, the spend days, the images); open
 * reservations stay, and settle into `used` as usual. Answers the usage after the reset.
 */
export async function resetKeyUsage (ctx: AdminContext, id: string): Promise<KeyUsageView> {
  const key = await ctx.store.keys.get(id)
  if (!key) throw keyNotFound()
  await createWallet({ ledger: ctx.store.ledger }).resetKeyUsage(key.id)
  return await usageOf(ctx, key)
}
