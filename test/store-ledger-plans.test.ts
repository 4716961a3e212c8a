// The PostgreSQL ledger's statements run as named prepared statements, whose generic plan is
// kept until the next ANALYZE of their tables. On a fresh database (autovacuum has not
// analyzed yet) the planner assumes a few hundred rows per table, and a join or an EXISTS over
// `holds` may become a sequential scan that then runs on every batch while the table grows by
// a row per request (seen in the bench: 17,000 holds scanned per settle batch, 2–7 ms each).
// Here every per-request and periodic ledger statement is planned generically on fresh,
// never-analyzed tables, as a new deployment's first requests plan them; the tables then grow
// to 20,000 holds and charges, the connection keeps those plans, and none may scan either table
// whole.
import pg from 'pg'
import t from 'tap'
import { HOLD_BATCH, REAP, RENEW, SETTLE_BATCH } from '../plugins/foundation/store/ledger/pg-ledger-sql.js'
import { pgTestBackend, seedFundedKey, TEST_DATABASE_URL } from './helpers/store.js'

interface PlanNode { 'Node Type': string, 'Relation Name'?: string, Plans?: PlanNode[] }

function scansOf (node: PlanNode, out: string[] = []): string[] {
  if (node['Node Type'] === 'Seq Scan' && node['Relation Name'] !== undefined) out.push(node['Relation Name'])
  for (const child of node.Plans ?? []) scansOf(child, out)
  return out
}

const ROWS = 20_000
const GROWING = ['holds', 'ledger_entries']

t.test('PostgreSQL ledger: no generic plan made on fresh tables scans holds or ledger_entries whole', async (t) => {
  const backend = pgTestBackend()
  t.teardown(() => backend.cleanup())
  const store = await backend.open()
  const { account } = await seedFundedKey(store, { account: 'plans', key: 'plans key' }, 1_000_000_000n)
  const client = new pg.Client({ connectionString: TEST_DATABASE_URL })
  await client.connect()
  t.teardown(() => client.end())
  await client.query(`SET search_path TO "${backend.location}"`)
  // Nothing may analyze the tables behind the test's back: the state under test is "no statistics yet".
  for (const table of GROWING) await client.query(`ALTER TABLE ${table} SET (autovacuum_enabled = false)`)
  const analyzed = await client.query<{ relname: string, n: string }>(
    `SELECT relname, COALESCE(last_analyze, last_autoanalyze)::text AS n FROM pg_stat_user_tables
     WHERE schemaname = $1 AND relname = ANY($2)`,
    [backend.location, GROWING]
  )
  t.same(analyzed.rows.map((r) => r.n), [null, null], 'the tables were never analyzed')
  await client.query('SET plan_cache_mode = force_generic_plan')
  const explain = async (i: number, params: string): Promise<string[]> => {
    const explained = await client.query<{ 'QUERY PLAN': Array<{ Plan: PlanNode }> }>(`EXPLAIN (FORMAT JSON) EXECUTE plan_${i} (${params})`)
    return scansOf(explained.rows[0]!['QUERY PLAN'][0]!.Plan).filter((table) => GROWING.includes(table))
  }

  const now = new Date().toISOString()
  const statements: Array<{ name: string, sql: string, values: unknown[] }> = [
    { name: 'hold batch', sql: HOLD_BATCH, values: [['hold_new'], [account.id], ['5'], ['0'], ['req_new'], [now], now] },
    { name: 'settle batch', sql: SETTLE_BATCH, values: [['hold_7', 'hold_8'], ['3', null], ['req_7', 'req_8'], [null, null], ['entry_new_1', 'entry_new_2'], now] },
    { name: 'reap', sql: REAP, values: [now, 500] },
    { name: 'renew', sql: RENEW, values: ['hold_9', now, 60_000] },
  ]
  const params = statements.map((s) => s.values.map((v) => v === null ? 'NULL' : client.escapeLiteral(Array.isArray(v) ? `{${v.map((x) => x === null ? 'NULL' : `"${String(x)}"`).join(',')}}` : String(v))).join(', '))
  for (const [i, s] of statements.entries()) {
    await client.query(`PREPARE plan_${i} AS ${s.sql}`)
    t.same(await explain(i, params[i]!), [], `${s.name}, planned on empty tables: no sequential scan of ${GROWING.join(' or ')}`)
  }
  // The tables grow by a row per request; the connection keeps the plans it made.
  await client.query(
    `INSERT INTO holds (id, account_id, amount, status, request_id, expires_at, created_at, settled_at, posted_amount)
     SELECT 'hold_' || g, $1, 10, 'posted', 'req_' || g, now(), now(), now(), 10 FROM generate_series(1, $2) g`,
    [account.id, ROWS]
  )
  await client.query(
    `INSERT INTO ledger_entries (id, account_id, amount, kind, posting_id, hold_id, request_id, created_at)
     SELECT 'entry_' || g, $1, -10, 'charge', 'post:hold_' || g, 'hold_' || g, 'req_' || g, now() FROM generate_series(1, $2) g`,
    [account.id, ROWS]
  )
  for (const [i, s] of statements.entries()) {
    t.same(await explain(i, params[i]!), [], `${s.name}, the same plan at ${ROWS} rows: no sequential scan`)
  }
})
