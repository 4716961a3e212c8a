import type { FastifyBaseLogger } from 'fastify'
import type { GatewayConfig } from '../../foundation/config/types.js'
import { concern } from '../../foundation/pipeline/concern.js'
import type { Clock } from '../../foundation/store/clock.js'
import type { ModelCatalogue } from '../models/index.js'
import type { HoldKeeper, Wallet } from './index.js'

/** charge and settle: the hold of the worst case, renewed while the request runs, and the charge of what it produced. */
export const walletConcern = concern({
  name: 'wallet',
  // The wallet (the ledger's one writer) and its hold keeper are the composition root's: jobs and the metrics use them too.
  plugin: async (parts: {
    readonly wallet: Wallet
    readonly keeper: HoldKeeper
    readonly models: ModelCatalogue
    readonly plan: { readonly config: Pick<GatewayConfig, 'wallet' | 'limits'> }
    readonly services: { readonly clock: Clock }
    readonly log: FastifyBaseLogger
  }) => (await import('./index.js')).walletPlugin({
    wallet: parts.wallet,
    keeper: parts.keeper,
    models: parts.models,
    clock: parts.services.clock,
    config: parts.plan.config.wallet,
    limits: parts.plan.config.limits,
    log: parts.log
  })
})
