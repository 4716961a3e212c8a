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
  overage: bigint | null
  unrecovered: bigint | null
  billing_status: string
  idempotency_key: string | null
  overhead_ms: number | null
  upstream_ms: number | null
  total_ms: number
  created_at: bigint
}

type SqlValue = string | number | bigint | null

/** Columns in insert order; encode() yields one value per column, in this order. */
const COLUMNS = [
  'request_id', 'account_id', 'key_id', 'route', 'operation', 'requested_model', 'answered_model', 'status',
  'outcome', 'error_code', 'stream', 'usage', 'usage_reported', 'cost', 'held', 'hold_id', 'posting_id',
  'overage', 'unrecovered', 'billing_status', 'overhead_ms', 'upstream_ms', 'total_ms', 'created_at', 'idempotency_key',
] as const satisfies ReadonlyArray<keyof Row>

/**
 * One row per statement run. A multi-row `VALUES (…), (…)` statement changes many pages in one
 * statement, so SQLite keeps a statement journal of their old content (to undo that statement
 * alone) and spills it to a temporary file past 64 KiB: at 50 connections, about half a
 * `pwrite` per request more. A single-row insert's journal stays in memory.
 */
const INSERT_ROW = `INSERT INTO request_log (${COLUMNS.join(', ')}) VALUES (${COLUMNS.map(() => '?').join(', ')})
  ON CONFLICT (request_id) DO NOTHING`

const bit = (value: boolean | null): number | null => (value === null ? null : value ? 1 : 0)

/** Appends the row's column values to `out`, in COLUMNS order. */
function encode (row: RequestLogRow, out: SqlValue[]): void {
  // Field by field: whatever else the caller's object carries is never stored.
  out.push(
    row.requestId,
    cleanText(row.accountId),
    cleanText(row.keyId),
    cleanText(row.route),
    cleanText(row.operation),
    cleanText(row.requestedModel),
    cleanText(row.answeredModel),
    row.status,
    cleanText(row.outcome),
    cleanText(row.errorCode),
    bit(row.stream),
    usageToJson(row.usage),
    bit(row.usageReported),
    row.cost,
    row.held,
    cleanText(row.holdId),
    cleanText(row.postingId),
    row.overage,
    row.unrecovered,
    row.billingStatus,
    row.overheadMs,
    row.upstreamMs,
    row.totalMs,
    row.createdAt.getTime(),
    cleanText(row.idempotencyKey)
  )
}

function decode (row: Row): RequestLogRow {
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
    overage: row.overage,
    unrecovered: row.unrecovered,
    billingStatus: row.billing_status as BillingStatus,
    idempotencyKey: row.idempotency_key,
    overheadMs: row.overhead_ms,
    upstreamMs: row.upstream_ms,
    totalMs: row.total_ms,
    createdAt: new Date(Number(row.created_at)),
  }
}

export function createSqliteRequestLogStore (db: Database): RequestLogStore {
  const insertRow = db.prepare<[SqlValue[]]>(INSERT_ROW)
  // One array for every row: run() has bound its values when it returns.
  const values: SqlValue[] = []
  const insertAll = db.transaction((rows: readonly RequestLogRow[]) => {
    for (const row of rows) {
      values.length = 0
      encode(row, values)
      insertRow.run(values)
    }
  })
  const byId = db.prepare<[string], Row>('SELECT * FROM request_log WHERE request_id = ?')
  // One statement per filter combination (at most 32): `? IS NULL OR …` would keep
  // SQLite from choosing the (account_id, created_at, request_id) index.
  const pages = new Map<string, Statement<Record<string, SqlValue>, Row>>()

  function pageStatement (q: RequestLogQuery): Statement<Record<string, SqlValue>, Row> {
    const where: string[] = []
    if (q.accountId !== undefined) where.push('account_id = @account_id')
    if (q.idempotencyKey !== undefined) where.push('idempotency_key = @idempotency_key')
    if (q.from !== undefined) where.push('created_at >= @from')
    if (q.to !== undefined) where.push('created_at < @to')
    if (q.before !== undefined) where.push('(created_at, request_id) < (@cursor_at, @cursor_id)')
    const key = where.join(' AND ')
    let statement = pages.get(key)
    if (!statement) {
      statement = db.prepare<Record<string, SqlValue>, Row>(
        `SELECT * FROM request_log ${key === '' ? '' : `WHERE ${key}`}
         ORDER BY created_at DESC, request_id DESC LIMIT @limit`
      )
      pages.set(key, statement)
    }
    return statement
  }

  return {
    async insertMany (rows) {
      assertRequestLogRows(rows)
      if (rows.length > 0) insertAll(firstOfEachId(rows))
    },

    async list (q): Promise<RequestLogPage> {
      const limit = checkLimit(q.limit)
      const params: Record<string, SqlValue> = { limit: limit + 1 }
      if (q.accountId !== undefined) params['account_id'] = q.accountId
      if (q.idempotencyKey !== undefined) params['idempotency_key'] = q.idempotencyKey
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

    async get (requestId) {
      const row = byId.get(requestId)
      return row ? decode(row) : null
    },
  }
}
