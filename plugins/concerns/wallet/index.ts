import type { FastifyBaseLogger } from 'fastify'
import type { GatewayPlugin } from '../../foundation/pipeline/plugin.js'
import { createHoldKeeper } from './hold-renewal.js'
import type { RequestHold } from './hold.js'
import { holdWorstCase, type WalletDeps } from './hold.js'
import { billingStatusFor, settle, type SettleDeps, type Settled } from './settle.js'
import type { Wallet } from './wallet.js'

export { holdOf, worstCaseCost, type RequestHold } from './hold.js'
export { chargeFor, billingStatusFor, type Settled } from './settle.js'
export { createWallet, type CreditInput, type HoldCloser, type PostInput, type UnrecoveredOverage, type UnrecoveredReporter, type Wallet, type WalletOptions } from './wallet.js'
export { createHoldKeeper, type HoldKeeper } from './hold-renewal.js'
export { reapExpiredHolds } from './reaper.js'
export { unrecoveredReporter } from './post.js'

declare module '../../foundation/pipeline/context.js' {
  interface RequestState {
    /** The wallet hold of the request's current target model. */
    hold: RequestHold
    /** How the settle phase left the wallet (absent when settlement failed). */
    settled: Settled
  }
}

export interface WalletPluginDeps extends Omit<WalletDeps, 'wallet'>, Omit<SettleDeps, 'wallet'> {
  /** The ledger's one writer (createWallet): holds, renewals, posts, releases. */
  wallet: Wallet
  /** Where a hold renewal that failed is reported (never the amount or the account). */
  log?: FastifyBaseLogger
}

/**
 * charge: the wallet hold of the worst-case cost (again for each fallback, at its price).
 * settle: posts what the upstream produced and releases the rest, exactly once. A hold is
 * renewed while its request runs (every TTL/3), so a long answer never outlives it. Every
 * write goes through `deps.wallet`, the ledger's one writer.
 */
export function walletPlugin (deps: WalletPluginDeps): GatewayPlugin {
  const keeper = deps.keeper ?? createHoldKeeper({ wallet: deps.wallet, warn: (fields) => { deps.log?.warn(fields, 'hold renewal') } })
  const withKeeper = { ...deps, keeper }
  const plugin: GatewayPlugin = {
    name: 'wallet',
    charge: holdWorstCase(withKeeper),
    async settle (ctx, outcome) {
      ctx.state.settled = await settle(withKeeper, ctx, outcome, outcome.usage)
    },
    billingStatus: (ctx, outcome) => billingStatusFor(ctx, outcome, outcome.usage),
    // A route that names no model (a job poll or download) holds nothing; it still settles.
    forRoute: (route) => route.namesModel ? plugin : { settle: plugin.settle, billingStatus: plugin.billingStatus }
  }
  return plugin
}
