// The access log: one structured line per request, written by a finish hook after settlement.
// It carries identifiers and numbers only: never a header, a key, a credential or any part of
// the body (a prompt). Fields are listed in docs/operations.md.
import type { FastifyBaseLogger } from 'fastify'
import type { AccessLogConfig } from '../../foundation/config/types.js'
import type { GatewayPlugin } from '../../foundation/pipeline/plugin.js'
import { formatMoney } from '../../foundation/pricing/money.js'

/** The message of every access log line (`msg`), to filter on. */
export const ACCESS_LOG_MESSAGE = 'request'

export function accessLogPlugin (log: FastifyBaseLogger, config: AccessLogConfig): GatewayPlugin {
  // The level is fixed at registration: no lookup per request.
  const write = log[config.level].bind(log)
  return {
    name: 'access-log',
    finish (ctx, outcome) {
      const settled = ctx.state.settled
      const auth = ctx.state.auth
      write({
        requestId: ctx.requestId,
        route: ctx.plan.id,
        // Catalogue ids only: a requested id that matched nothing is not echoed into the log.
        model: (outcome.answeredModel ?? ctx.model)?.id ?? null,
        status: outcome.httpStatus,
        code: outcome.errorCode,
        outcome: outcome.kind,
        overheadMs: outcome.overheadMs,
        upstreamMs: outcome.upstreamMs,
        totalMs: Number(process.hrtime.bigint() - ctx.startedAt) / 1e6,
        billing: settled?.billing ?? ctx.billing,
        billed: settled?.cost != null ? formatMoney(settled.cost) : null,
        accountId: auth?.account.id ?? null,
        keyId: auth?.key.id ?? null
      }, ACCESS_LOG_MESSAGE)
    }
  }
}
