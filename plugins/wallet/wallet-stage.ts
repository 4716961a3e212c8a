import type { WalletConfig } from '../config/types.js'
import { gatewayError } from '../errors/index.js'
import { authOf } from '../auth/auth-stage.js'
import type { RequestContext } from '../gateway/context.js'
import type { Stage } from '../gateway/stages.js'
import type { CompiledModel } from '../models/catalogue.js'
import { costOf } from '../pricing/cost.js'
import { parseMoney } from '../pricing/money.js'
import { worstCaseUsage } from '../pricing/worst-case.js'
import type { LedgerStore } from '../store/ledger/types.js'
import type { HoldKeeper } from './hold-renewal.js'

const WALLET_SLOT = 'wallet'

/** The hold placed for a request: settled after the upstream finishes, or released. */
export interface RequestHold {
  holdId: string
  amount: bigint
  accountId: string
  model: CompiledModel
  /** Set once the hold was settled or released, so it never happens twice. */
  closed: boolean
}

export function holdOf (ctx: RequestContext): RequestHold | undefined {
  return ctx.slots.get(WALLET_SLOT) as RequestHold | undefined
}

/** Operations whose charge comes when an asynchronous job ends: their hold lives longer. */
export const JOB_OPERATIONS: ReadonlySet<string> = new Set(['videos.create', 'music.create', 'genai.generateVideos'])

export interface WalletStageDeps {
  ledger: LedgerStore
  config: WalletConfig
  /** Renews each hold while its request runs (settle drops it). */
  keeper?: HoldKeeper
}

/** Worst-case cost of the request at this model's price. */
export function worstCaseCost (ctx: RequestContext, model: CompiledModel): bigint {
  const body = ctx.body
  const usage = worstCaseUsage({
    operation: ctx.plan.operation,
    model: { pricing: model.pricing, ...(model.maxOutputTokens === undefined ? {} : { maxOutputTokens: model.maxOutputTokens }) },
    ...(body?.kind === 'json' ? { json: body.json } : {}),
    ...(body?.kind === 'multipart' ? { multipart: { fields: body.summary.fields, files: body.summary.files } } : {}),
    bodyBytes: body?.raw.length ?? 0
  })
  return costOf(model.price, usage)
}

/**
 * Holds the worst-case cost before anything is sent upstream; refuses the request when the
 * wallet cannot hold it. Runs again for each fallback model (its price may differ): the
 * previous hold is released first.
 */
export function walletStage (deps: WalletStageDeps): Stage {
  const floor = parseMoney(deps.config.floor)
  return {
    name: 'wallet',
    priority: 600,
    perModel: true,
    async run (ctx) {
      const model = ctx.model
      const auth = authOf(ctx)
      if (!model || !auth) return // job polls bill nothing
      if (model.requiresTopup && !auth.account.toppedUp) throw gatewayError('MODEL_REQUIRES_TOPUP', { param: 'model' })
      const previous = holdOf(ctx)
      if (previous && !previous.closed) {
        previous.closed = true
        deps.keeper?.drop(previous.holdId)
        await deps.ledger.release(previous.holdId)
      }
      const amount = worstCaseCost(ctx, model)
      const ttlMs = JOB_OPERATIONS.has(ctx.plan.operation) ? deps.config.job_hold_ttl_ms : deps.config.hold_ttl_ms
      const held = await deps.ledger.hold({ accountId: auth.account.id, amount, floor, requestId: ctx.requestId, ttlMs })
      if (!held.ok) {
        ctx.slots.delete(WALLET_SLOT)
        throw gatewayError('BILLING_INSUFFICIENT_CREDITS')
      }
      const hold: RequestHold = { holdId: held.holdId, amount, accountId: auth.account.id, model, closed: false }
      ctx.slots.set(WALLET_SLOT, hold)
      deps.keeper?.keep(hold, ttlMs)
      ctx.billing = 'PENDING'
    }
  }
}
