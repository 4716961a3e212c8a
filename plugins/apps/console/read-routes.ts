// The signed-in account's money, request log, usage and the model catalogue. Every query
// parameter has a route schema (api.ts gives the routes without one an empty one), so a bad
// value or an unknown name is a 400 REQUEST_INVALID naming it, never a 500.
import type { FastifyInstance } from 'fastify'
import * as admin from '../../concerns/accounts/service.js'
import { listModels } from '../admin/models.js'
import { requestLogView } from '../../concerns/accounts/views.js'
import { gatewayError } from '../../foundation/errors/index.js'
import { formatMoney } from '../../foundation/pricing/money.js'
import { InvalidCursorError } from '../../foundation/store/index.js'
import { invalid, signedInAs, type ConsoleDeps } from './context.js'
import { ReadGate } from './read-gate.js'
import { usageByDay } from './usage.js'

const query = (properties: Record<string, unknown>): Record<string, unknown> => ({ type: 'object', properties, additionalProperties: false })
const DIGITS = { type: 'string', pattern: '^[0-9]{1,7}$' } as const
// No control characters: PostgreSQL refuses a NUL in a text parameter (a 500 before), and no id, model or outcome has one.
const TEXT = { type: 'string', minLength: 1, maxLength: 400, pattern: '^[^\\u0000-\\u001f\\u007f]+$' } as const

export const READ_QUERIES = {
  ledger: query({ limit: DIGITS, before: TEXT }),
  requests: query({ from: TEXT, to: TEXT, limit: DIGITS, before: TEXT, model: TEXT, outcome: TEXT, key_id: TEXT }),
  usage: query({ days: DIGITS })
}

interface LedgerQuery { limit?: string, before?: string }
interface RequestsQuery { from?: string, to?: string, limit?: string, before?: string, model?: string, outcome?: string, key_id?: string }
interface UsageQuery { days?: string }
interface IdParams { id: string }

export function readRoutes (app: FastifyInstance, deps: ConsoleDeps): void {
  const { store, sessions } = deps
  const ctx = deps.admin
  const gate = new ReadGate(ctx.now)

  app.get('/wallet', async (req) => {
    const { session } = await signedInAs(sessions, req, false)
    return await admin.getWallet(ctx, session.accountId)
  })

  app.get<{ Querystring: LedgerQuery }>('/ledger', { schema: { querystring: READ_QUERIES.ledger } }, async (req) => {
    const { session } = await signedInAs(sessions, req, false)
    const limit = req.query.limit === undefined ? 50 : Number(req.query.limit)
    if (limit < 1 || limit > 200) throw invalid('limit', 'limit must be an integer from 1 to 200.')
    const before = req.query.before
    const rows = await gate.run(session.accountId, 'ledger', { rows: limit }, async () =>
      await store.ledger.entries(session.accountId, { limit: limit + 1, ...(before === undefined ? {} : { before }) }))
    const data = rows.slice(0, limit).map((e) => ({
      id: e.id,
      kind: e.kind,
      amount: formatMoney(e.amount),
      request_id: e.requestId,
      note: e.note,
      created_at: e.createdAt.toISOString()
    }))
    return { data, has_more: rows.length > limit, next_before: rows.length > limit ? (data[data.length - 1]?.id ?? null) : null }
  })

  app.get<{ Querystring: RequestsQuery }>('/requests', { schema: { querystring: READ_QUERIES.requests } }, async (req) => {
    const { session } = await signedInAs(sessions, req, false)
    const { model, outcome, key_id: keyId, ...rest } = req.query
    // account_id is the session's, whatever the query says.
    // Checked before the page's rows are spent, by the admin service's own reading of it.
    const rows = admin.pageLimit(rest.limit)
    const page = await gate.run(session.accountId, 'requests', { rows }, async () => await admin.listRequests(ctx, { ...rest, account_id: session.accountId }))
    const data = page.data.filter((r) =>
      (model === undefined || r.requested_model === model || r.answered_model === model) &&
      (outcome === undefined || r.outcome === outcome) &&
      (keyId === undefined || r.key_id === keyId))
    return { ...page, data }
  })

  app.get<{ Querystring: UsageQuery }>('/usage', { schema: { querystring: READ_QUERIES.usage } }, async (req) => {
    const { session } = await signedInAs(sessions, req, false)
    const days = req.query.days === undefined ? 30 : Number(req.query.days)
    if (days < 1 || days > 90) throw invalid('days', 'days must be an integer from 1 to 90.')
    try {
      return await gate.run(session.accountId, 'usage', { summary: true }, async () => await usageByDay(store.requestLog, session.accountId, days, ctx.now()))
    } catch (err) {
      if (err instanceof InvalidCursorError) throw invalid('days', 'The request log could not be paged.')
      throw err
    }
  })

  app.get('/models', async (req) => {
    await signedInAs(sessions, req, false)
    // The published catalogue a key can call or will again: no draft, no retired model.
    // How the operator got there (configured and stored status, pricing checks) is not the account holder's.
    const data = (await listModels(ctx)).data
      .filter((m) => m.status === 'active' || m.status === 'paused')
      .map(({ configured_status: _c, stored_status: _s, status_updated_at: _u, pricing_complete: _p, pricing_problems: _q, ...shown }) => shown)
    return { data }
  })

  // The request log row of one request (the dashboard links here); another account's is not found.
  app.get<{ Params: IdParams }>('/requests/:id', async (req) => {
    const { session } = await signedInAs(sessions, req, false)
    const row = await store.requestLog.get(req.params.id)
    if (row === null || row.accountId !== session.accountId) throw gatewayError('REQUEST_ROUTE_NOT_FOUND', { param: 'request_id', detail: 'No such request.' })
    return requestLogView(row)
  })
}
