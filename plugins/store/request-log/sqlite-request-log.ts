import type { Database, Statement } from 'better-sqlite3'
import { checkLimit } from '../context.js'
import { cleanText, decodeCursor, encodeCursor, firstOfEachId, usageFromJson, usageToJson } from './codec.js'
import type { BillingStatus, RequestLogPage, RequestLogQuery, RequestLogRow, RequestLogStore } from './types.js'
import { assertRequestLogRows } from './validate.js'

// The database runs with defaultSafeIntegers: every INTEGER column reads as a bigint.
interface Row {
  request_id: string
  account_id: string | null
  key_id: string | null
  route: string
  operation: string
  requested_model: string | null
  answered_model: string | null
  status: bigint
  outcome: string
  error_code: string | null
  stream: bigint
  usage: string | null
  usage_reported: bigint | null
  cost: bigint | null
  held: bigint | null
  hold_id: string | null
  posting_id: string | null
  billing_status: string
  overhead_ms: number | null
  upstream_ms: number | null
  total_ms: number
  created_at: bigint
}

type SqlValue = string | number | bigint | null

const INSERT = `INSERT INTO request_log (request_id, account_id, key_id, route, operation, requested_model,
  answered_model, status, outcome, error_code, stream, usage, usage_reported, cost, held, hold_id, posting_id,
  billing_status, overhead_ms, upstream_ms, total_ms, created_at)
  VALUES (@request_id, @account_id, @key_id, @route, @operation, @requested_model, @answered_model, @status,
  @outcome, @error_code, @stream, @usage, @usage_reported, @cost, @held, @hold_id, @posting_id, @billing_status,
  @overhead_ms, @upstream_ms, @total_ms, @created_at)
  ON CONFLICT (request_id) DO NOTHING`

const bit = (value: boolean | null): number | null => (value === null ? null : value ? 1 : 0)

function encode(row: RequestLogRow): Record<string, SqlValue> {
  // Built field by field: whatever else the caller's object carries is never stored.
  return {
    request_id: row.requestId,
    account_id: cleanText(row.accountId),
    key_id: cleanText(row.keyId),
    route: cleanText(row.route),
    operation: cleanText(row.operation),
    requested_model: cleanText(row.requestedModel),
    answered_model: cleanText(row.answeredModel),
    status: row.status,
    outcome: cleanText(row.outcome),
    error_code: cleanText(row.errorCode),
    stream: bit(row.stream),
    usage: usageToJson(row.usage),
    usage_reported: bit(row.usageReported),
    cost: row.cost,
    held: row.held,
    hold_id: cleanText(row.holdId),
    posting_id: cleanText(row.postingId),
    billing_status: row.billingStatus,
    overhead_ms: row.overheadMs,
    upstream_ms: row.upstreamMs,
    total_ms: row.totalMs,
    created_at: row.createdAt.getTime(),
  }
}

function decode(row: Row): RequestLogRow {
  return {
    requestId: row.request_id,
    accountId: row.account_id,
    keyId: row.key_id,
    route: row.route,
    operation: row.operation,
    requestedModel: row.requested_model,
    answeredModel: row.answered_model,
    status: Number(row.status),
    outcome: row.outcome,
    errorCode: row.error_code,
    stream: row.stream === 1n,
    usage: usageFromJson(row.usage),
    usageReported: row.usage_reported === null ? null : row.usage_reported === 1n,
    cost: row.cost,
    held: row.held,
    holdId: row.hold_id,
    postingId: row.posting_id,
    billingStatus: row.billing_status as BillingStatus,
    overheadMs: row.overhead_ms,
    upstreamMs: row.upstream_ms,
    totalMs: row.total_ms,
    createdAt: new Date(Number(row.created_at)),
  }
}

export function createSqliteRequestLogStore(db: Database): RequestLogStore {
  const insert = db.prepare<[Record<string, SqlValue>]>(INSERT)
  const insertAll = db.transaction((rows: readonly RequestLogRow[]) => {
    for (const row of rows) insert.run(encode(row))
  })
  const byId = db.prepare<[string], Row>('SELECT * FROM request_log WHERE request_id = ?')
  // One statement per filter combination (at most 16): `? IS NULL OR …` would keep
  // SQLite from choosing the (account_id, created_at, request_id) index.
  const pages = new Map<string, Statement<Record<string, SqlValue>, Row>>()

  function pageStatement(q: RequestLogQuery): Statement<Record<string, SqlValue>, Row> {
    const where: string[] = []
    if (q.accountId !== undefined) where.push('account_id = @account_id')
    if (q.from !== undefined) where.push('created_at >= @from')
    if (q.to !== undefined) where.push('created_at < @to')
    if (q.before !== undefined) where.push('(created_at, request_id) < (@cursor_at, @cursor_id)')
    const key = where.join(' AND ')
    let statement = pages.get(key)
    if (!statement) {
      statement = db.prepare<Record<string, SqlValue>, Row>(
        `SELECT * FROM request_log ${key === '' ? '' : `WHERE ${key}`}
         ORDER BY created_at DESC, request_id DESC LIMIT @limit`,
      )
      pages.set(key, statement)
    }
    return statement
  }

  return {
    async insertMany(rows) {
      assertRequestLogRows(rows)
      if (rows.length > 0) insertAll(firstOfEachId(rows))
    },

    async list(q): Promise<RequestLogPage> {
      const limit = checkLimit(q.limit)
      const params: Record<string, SqlValue> = { limit: limit + 1 }
      if (q.accountId !== undefined) params['account_id'] = q.accountId
      if (q.from !== undefined) params['from'] = q.from.getTime()
      if (q.to !== undefined) params['to'] = q.to.getTime()
      if (q.before !== undefined) {
        const cursor = decodeCursor(q.before)
        params['cursor_at'] = cursor.createdAtMs
        params['cursor_id'] = cursor.requestId
      }
      const found = pageStatement(q).all(params).map(decode)
      const rows = found.slice(0, limit)
      const last = rows.at(-1)
      return { rows, nextBefore: found.length > limit && last ? encodeCursor(last) : null }
    },

    async get(requestId) {
      const row = byId.get(requestId)
      return row ? decode(row) : null
    },
  }
}
