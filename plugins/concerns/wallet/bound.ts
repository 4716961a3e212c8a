import type { LimitsConfig, WalletConfig } from '../../foundation/config/types.js'
import { parseMoney } from '../../foundation/pricing/money.js'

type Tiers = Pick<LimitsConfig, 'default_tier' | 'tiers'>

/** The overdraft of an account's tier; a tier no longer defined gets default_tier's (as the rate limits do). */
export function overdraftOf (limits: Tiers, tier: string): bigint {
  const own = Object.prototype.hasOwnProperty.call(limits.tiers, tier) ? limits.tiers[tier] : undefined
  return parseMoney((own ?? limits.tiers[limits.default_tier])?.overdraft ?? '0')
}

/** The bound of an account of each tier, wallet.floor − the tier's overdraft, compiled once. */
export function compileBounds (wallet: Pick<WalletConfig, 'floor'>, limits: Tiers): (tier: string) => bigint {
  const floor = parseMoney(wallet.floor)
  const bounds = new Map<string, bigint>()
  for (const name of Object.keys(limits.tiers)) bounds.set(name, floor - overdraftOf(limits, name))
  const fallback = floor - overdraftOf(limits, limits.default_tier)
  return (tier) => bounds.get(tier) ?? fallback
}
