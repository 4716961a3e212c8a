// Spend and usage of an account by UTC day and by model, summed from its request log rows.
import { formatMoney } from '../../foundation/pricing/money.js'
import type { RequestLogStore } from '../../foundation/store/index.js'

/** Rows read at most (10 pages of 1000); past it the answer says `truncated`. */
const MAX_ROWS = 10_000
const PAGE = 1000
const DAY_MS = 86_400_000

export interface UsageDay { date: string, requests: number, cost: string }
export interface UsageModel { model: string, requests: number, cost: string, input_tokens: number, output_tokens: number, images: number }
export interface UsageView { from: string, to: string, days: UsageDay[], models: UsageModel[], total_cost: string, truncated: boolean }

export async function usageByDay (log: RequestLogStore, accountId: string, days: number, now: Date): Promise<UsageView> {
  const today = Math.floor(now.getTime() / DAY_MS) * DAY_MS
  const from = new Date(today - (days - 1) * DAY_MS)
  const byDay = new Map<string, { requests: number, cost: bigint }>()
  for (let d = 0; d < days; d++) byDay.set(new Date(from.getTime() + d * DAY_MS).toISOString().slice(0, 10), { requests: 0, cost: 0n })
  const byModel = new Map<string, { requests: number, cost: bigint, input: number, output: number, images: number }>()
  let total = 0n
  let read = 0
  let before: string | undefined
  for (;;) {
    const page = await log.list({ accountId, from, limit: PAGE, ...(before === undefined ? {} : { before }) })
    for (const r of page.rows) {
      const cost = r.cost ?? 0n
      total += cost
      const day = byDay.get(r.createdAt.toISOString().slice(0, 10))
      if (day !== undefined) { day.requests++; day.cost += cost }
      const model = r.answeredModel ?? r.requestedModel ?? '(none)'
      const m = byModel.get(model) ?? { requests: 0, cost: 0n, input: 0, output: 0, images: 0 }
      m.requests++
      m.cost += cost
      m.input += r.usage?.inputTokens ?? 0
      m.output += r.usage?.outputTokens ?? 0
      m.images += r.usage?.images ?? 0
      byModel.set(model, m)
    }
    read += page.rows.length
    if (page.nextBefore === null) return view(false)
    if (read >= MAX_ROWS) return view(true)
    before = page.nextBefore
  }

  function view (truncated: boolean): UsageView {
    return {
      from: from.toISOString(),
      to: now.toISOString(),
      days: [...byDay].map(([date, d]) => ({ date, requests: d.requests, cost: formatMoney(d.cost) })),
      models: [...byModel].sort((a, b) => (b[1].cost > a[1].cost ? 1 : b[1].cost < a[1].cost ? -1 : 0))
        .map(([model, m]) => ({ model, requests: m.requests, cost: formatMoney(m.cost), input_tokens: m.input, output_tokens: m.output, images: m.images })),
      total_cost: formatMoney(total),
      truncated
    }
  }
}
