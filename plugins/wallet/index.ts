import type { GatewayPlugin } from '../pipeline/plugin.js'
import type { RequestHold } from './hold.js'
import { holdWorstCase, type WalletDeps } from './hold.js'
import { billingStatusFor, settle, type SettleDeps, type Settled } from './settle.js'

export { holdOf, worstCaseCost, type RequestHold } from './hold.js'
export { chargeFor, billingStatusFor, type Settled } from './settle.js'

declare module '../pipeline/context.js' {
  interface RequestState {
    /** The wallet hold of the request's current target model. */
    hold: RequestHold
    /** How the settle phase left the wallet (absent when settlement failed). */
    settled: Settled
  }
}

export interface WalletPluginDeps extends WalletDeps, SettleDeps {}

/**
 * charge: the wallet hold of the worst-case cost (again for each fallback, at its price).
 * settle: posts what the upstream produced and releases the rest, exactly once.
 */
export function walletPlugin (deps: WalletPluginDeps): GatewayPlugin {
  return {
    name: 'wallet',
    charge: holdWorstCase(deps),
    async settle (ctx, outcome) {
      ctx.state.settled = await settle(deps, ctx, outcome, outcome.usage)
    },
    billingStatus: (ctx, outcome) => billingStatusFor(ctx, outcome, outcome.usage)
  }
}
