import type { Pool } from 'pg'
import { checkLimit } from '../context.js'
import { cleanText, decodeCursor, encodeCursor, firstOfEachId, usageFromJson, usageToJson } from './codec.js'
import type { BillingStatus, RequestLogPage, RequestLogRow, RequestLogStore } from './types.js'
import { assertRequestLogRows } from './validate.js'

interface Row {
  request_id: string
  account_id: string | null
  key_id: string | null
  route: string
  operation: string
  requested_model: string | null
  answered_model: string | null
  status: number
  outcome: string
  error_code: string | null
  stream: boolean
  usage: unknown
  usage_reported: boolean | null
  // pg returns BIGINT as text so no precision is lost on the way.
  cost: string | null
  held: string | null
  hold_id: string | null
  posting_id: string | null
  overage: string | null
  unrecovered: string | null
  billing_status: string
  idempotency_key: string | null
  overhead_ms: number | null
  upstream_ms: number | null
  total_ms: number
  created_at: Date
}

/** Column, array type of its parameter, and how a row fills it. */
const COLUMNS: ReadonlyArray<readonly [string, string, (row: RequestLogRow) => unknown]> = [
  ['request_id', 'text', (r) => r.requestId],
  ['account_id', 'text', (r) => cleanText(r.accountId)],
  ['key_id', 'text', (r) => cleanText(r.keyId)],
  ['route', 'text', (r) => cleanText(r.route)],
  ['operation', 'text', (r) => cleanText(r.operation)],
  ['requested_model', 'text', (r) => cleanText(r.requestedModel)],
  ['answered_model', 'text', (r) => cleanText(r.answeredModel)],
  ['status', 'int4', (r) => r.status],
  ['outcome', 'text', (r) => cleanText(r.outcome)],
  ['error_code', 'text', (r) => cleanText(r.errorCode)],
  ['stream', 'bool', (r) => r.stream],
  ['usage', 'jsonb', (r) => usageToJson(r.usage)],
  ['usage_reported', 'bool', (r) => r.usageReported],
  ['cost', 'int8', (r) => r.cost?.toString() ?? null],
  ['held', 'int8', (r) => r.held?.toString() ?? null],
  ['hold_id', 'text', (r) => cleanText(r.holdId)],
  ['posting_id', 'text', (r) => cleanText(r.postingId)],
  ['overage', 'int8', (r) => r.overage?.toString() ?? null],
  ['unrecovered', 'int8', (r) => r.unrecovered?.toString() ?? null],
  ['billing_status', 'text', (r) => r.billingStatus],
  ['overhead_ms', 'float8', (r) => r.overheadMs],
  ['upstream_ms', 'float8', (r) => r.upstreamMs],
  ['total_ms', 'float8', (r) => r.totalMs],
  ['created_at', 'timestamptz', (r) => r.createdAt.toISOString()],
  ['idempotency_key', 'text', (r) => cleanText(r.idempotencyKey)],
]

// One parameter per column whatever the batch size (a VALUES list would hit the 65,535
// parameter limit at ~3,000 rows); unnest zips the arrays back into rows, in order.
const INSERT = `INSERT INTO request_log (${COLUMNS.map(([c]) => c).join(', ')})
  SELECT * FROM unnest(${COLUMNS.map(([, type], i) => `$${i + 1}::${type}[]`).join(', ')})
  ON CONFLICT (request_id) DO NOTHING`

const big = (value: string | null): bigint | null => (value === null ? null : BigInt(value))

function decode (row: Row): RequestLogRow {
  return {
    requestId: row.request_id,
    accountId: row.account_id,
    keyId: row.key_id,
    route: row.route,
    operation: row.operation,
    requestedModel: row.requested_model,
    answeredModel: row.answered_model,
    status: row.status,
    outcome: row.outcome,
    errorCode: row.error_code,
    stream: row.stream,
    usage: usageFromJson(row.usage),
    usageReported: row.usage_reported,
    cost: big(row.cost),
    held: big(row.held),
    holdId: row.hold_id,
    postingId: row.posting_id,
    overage: big(row.overage),
    unrecovered: big(row.unrecovered),
    billingStatus: row.billing_status as BillingStatus,
    idempotencyKey: row.idempotency_key,
    overheadMs: row.overhead_ms,
    upstreamMs: row.upstream_ms,
    totalMs: row.total_ms,
    createdAt: row.created_at,
  }
}

export function createPgRequestLogStore (pool: Pool): RequestLogStore {
  return {
    async insertMany (rows) {
      assertRequestLogRows(rows)
      if (rows.length === 0) return
      const unique = firstOfEachId(rows)
      await pool.query(
        INSERT,
        COLUMNS.map(([, , value]) => unique.map(value))
      )
    },

    async list (q): Promise<RequestLogPage> {
      const limit = checkLimit(q.limit)
      const where: string[] = []
      const params: unknown[] = []
      const param = (value: unknown): string => {
        params.push(value)
        return `$${params.length}`
      }
      if (q.accountId !== undefined) where.push(`account_id = ${param(q.accountId)}`)
      if (q.idempotencyKey !== undefined) where.push(`idempotency_key = ${param(q.idempotencyKey)}`)
      if (q.from !== undefined) where.push(`created_at >= ${param(q.from)}`)
      if (q.to !== undefined) where.push(`created_at < ${param(q.to)}`)
      if (q.before !== undefined) {
        const cursor = decodeCursor(q.before)
        where.push(`(created_at, request_id) < (${param(new Date(cursor.createdAtMs))}, ${param(cursor.requestId)})`)
      }
      const { rows: found } = await pool.query<Row>(
        `SELECT * FROM request_log ${where.length === 0 ? '' : `WHERE ${where.join(' AND ')}`}
         ORDER BY created_at DESC, request_id DESC LIMIT ${param(limit + 1)}`,
        params
      )
      const rows = found.slice(0, limit).map(decode)
      const last = rows.at(-1)
      return { rows, nextBefore: found.length > limit && last ? encodeCursor(last) : null }
    },

    async get (requestId) {
      const { rows } = await pool.query<Row>('SELECT * FROM request_log WHERE request_id = $1', [requestId])
      const row = rows[0]
      return row ? decode(row) : null
    },
  }
}
