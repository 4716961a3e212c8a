// PostgreSQL ledger. hold() and settle()/release() calls queue per process and run as
// group-committed batches (see group-commit.ts): one statement and one durable commit per
// batch, whatever its size. The statements and their locking argument are in pg-ledger-sql.ts.
import pg from 'pg'
import type { CustomTypesConfig, Pool, PoolClient, QueryConfig, QueryResultRow } from 'pg'
import type { StoreContext } from '../context.js'
import { checkLimit } from '../context.js'
import { inTransaction } from '../pg/transaction.js'
import { GroupCommit, type GroupCommitOptions, type ItemOutcome } from './group-commit.js'
import {
  REAP_CHUNK,
  UnknownAccountError,
  UnknownHoldError,
  checkCredit,
  checkHold,
  checkHoldId,
  checkRenew,
  checkSameCredit,
  checkSettle,
  parseEntryKind,
} from './ledger-input.js'
import { CAP_USAGE, CAPPED_HOLD, CREATE_WALLETS, HOLD_BATCH, LOCK_WALLET, REAP, RENEW, SETTLE_BATCH } from './pg-ledger-sql.js'
import { capPeriods, capRefusal, usageOf, type UsageRow } from './caps.js'
import type { HoldInput, HoldResult, KeyUsageRow, LedgerStore, RenewResult, SettleResult } from './types.js'

export interface PgLedgerOptions {
  /** Hold batches; default DEFAULT_PG_BATCH. */
  holds?: GroupCommitOptions
  /** Settle/release batches; default DEFAULT_PG_BATCH. */
  settles?: GroupCommitOptions
}

/**
 * One batch in flight per kind per process: with the wallet row lock serialising batches
 * on a hot account anyway, a second in-flight batch mostly waits; see bench/ledger-pg.ts.
 */
export const DEFAULT_PG_BATCH: GroupCommitOptions = { maxBatch: 1000, maxInFlight: 1 }

export interface PgLedger extends LedgerStore {
  /** Answers every queued call, then refuses new ones. */
  close(): Promise<void>
}

const INT8_OID = 20
const defaultParser = pg.types.getTypeParser.bind(pg.types) as (oid: number, format?: string) => unknown
/** BIGINT columns arrive as bigint, for this store's queries only (others keep pg's strings). */
const LEDGER_TYPES = {
  getTypeParser: (oid: number, format?: string) => (oid === INT8_OID ? BigInt : defaultParser(oid, format)),
} as unknown as CustomTypesConfig

const FOREIGN_KEY_VIOLATION = '23503'

function pgErrorCode (err: unknown): string | undefined {
  const code: unknown = err instanceof Error ? Reflect.get(err, 'code') : undefined
  return typeof code === 'string' ? code : undefined
}

type Runner = Pool | PoolClient

async function rows<R extends QueryResultRow> (db: Runner, query: QueryConfig): Promise<R[]> {
  return (await db.query<R>({ ...query, types: LEDGER_TYPES })).rows
}

interface HoldItem {
  holdId: string
  accountId: string
  amount: bigint
  floor: bigint
  requestId: string
  expiresAt: Date
}

/** `amount` null releases the hold. */
interface CloseItem {
  holdId: string
  amount: bigint | null
  requestId: string | null
  note: string | null
}

interface EntryRow {
  id: string
  account_id: string
  amount: bigint
  kind: string
  posting_id: string
  hold_id: string | null
  request_id: string | null
  note: string | null
  overage: bigint | null
  unrecovered: bigint | null
  created_at: Date
}

export function createPgLedgerStore (pool: Pool, ctx: StoreContext, opts: PgLedgerOptions = {}): PgLedger {
  async function runHolds (items: HoldItem[]): Promise<Array<ItemOutcome<HoldResult>>> {
    const decided = await rows<{ ord: number; outcome: string }>(pool, {
      name: 'ledger_hold_batch',
      text: HOLD_BATCH,
      values: [
        items.map((i) => i.holdId),
        items.map((i) => i.accountId),
        items.map((i) => i.amount.toString()),
        items.map((i) => i.floor.toString()),
        items.map((i) => i.requestId),
        items.map((i) => i.expiresAt.toISOString()),
        ctx.clock.now(),
      ],
    })
    const outcomes = decided.map((row): ItemOutcome<HoldResult> => {
      const item = items[row.ord - 1] as HoldItem
      if (row.outcome === 'admitted') return { kind: 'done', value: { ok: true, holdId: item.holdId, expiresAt: item.expiresAt } }
      if (row.outcome === 'refused') return { kind: 'done', value: { ok: false, error: 'insufficient_funds' } }
      if (row.outcome === 'topup_required') return { kind: 'done', value: { ok: false, error: 'topup_required' } }
      return { kind: 'retry' }
    })
    const noWallet = [...new Set(items.filter((_, i) => decided[i]?.outcome === 'no_wallet').map((i) => i.accountId))]
    if (noWallet.length === 0) return outcomes
    // The batch above is committed: from here on, fail only the items that wait for a wallet.
    try {
      const unknown = new Set(
        (await rows<{ id: string }>(pool, { text: CREATE_WALLETS, values: [noWallet, ctx.clock.now()] })).map((r) => r.id)
      )
      return outcomes.map((o, i) => {
        const accountId = items[i]?.accountId ?? ''
        return decided[i]?.outcome === 'no_wallet' && unknown.has(accountId)
          ? { kind: 'failed', error: new UnknownAccountError(accountId) }
          : o
      })
    } catch (err) {
      const error = err instanceof Error ? err : new Error(String(err))
      return outcomes.map((o, i) => (decided[i]?.outcome === 'no_wallet' ? { kind: 'failed', error } : o))
    }
  }

  async function runCloses (items: CloseItem[]): Promise<Array<ItemOutcome<SettleResult>>> {
    const result = await rows<{
      ord: number
      status: string | null
      amount: bigint | null
      posted_amount: bigint | null
      overage: bigint | null
      unrecovered: bigint | null
      known: boolean
    }>(pool, {
      name: 'ledger_settle_batch',
      text: SETTLE_BATCH,
      values: [
        items.map((i) => i.holdId),
        items.map((i) => (i.amount === null ? null : i.amount.toString())),
        items.map((i) => i.requestId),
        items.map((i) => i.note),
        items.map(() => ctx.ids('entry')),
        ctx.clock.now(),
      ],
    })
    return result.map((row): ItemOutcome<SettleResult> => {
      const item = items[row.ord - 1] as CloseItem
      if (row.status === null || row.amount === null) {
        if (!row.known) return { kind: 'failed', error: new UnknownHoldError(item.holdId) }
        return { kind: 'done', value: { posted: 0n, released: 0n, overage: 0n, unrecovered: 0n, duplicate: true } }
      }
      // posted_amount is the part of the hold the charge used; the entry posted it and the overage.
      const used = row.status === 'posted' ? (row.posted_amount ?? 0n) : 0n
      const overage = row.overage ?? 0n
      return {
        kind: 'done',
        value: { posted: used + overage, released: row.amount - used, overage, unrecovered: row.unrecovered ?? 0n, duplicate: false }
      }
    })
  }

  const holds = new GroupCommit(runHolds, opts.holds ?? DEFAULT_PG_BATCH)
  // One hold at most once per batch: the second settle of a hold waits for the next batch
  // and finds it closed, so it answers duplicate: true.
  const closes = new GroupCommit(runCloses, opts.settles ?? DEFAULT_PG_BATCH, (item) => item.holdId)

  /**
   * A hold of a key with caps: its own transaction (not the group-committed batch), which locks
   * the account's wallet first — the lock every writer of the key's buckets takes before them
   * (settle, release and reap batches included) — so concurrent holds of the key are decided
   * one after the other on committed usage, and no lock order is ever inverted.
   */
  async function cappedHold (input: HoldInput): Promise<HoldResult> {
    const caps = input.caps
    if (caps === undefined) throw new Error('cappedHold without caps')
    return await inTransaction(pool, async (client) => {
      const now = ctx.clock.now()
      let [wallet] = await rows<{ available: bigint, blocked: boolean }>(client, { name: 'ledger_cap_lock', text: LOCK_WALLET, values: [input.accountId] })
      if (!wallet) {
        if (-input.amount < input.floor) return { ok: false, error: 'insufficient_funds' }
        const unknown = await rows<{ id: string }>(client, { text: CREATE_WALLETS, values: [[input.accountId], now] })
        if (unknown.length > 0) throw new UnknownAccountError(input.accountId)
        ;[wallet] = await rows<{ available: bigint, blocked: boolean }>(client, { name: 'ledger_cap_lock', text: LOCK_WALLET, values: [input.accountId] })
        if (!wallet) throw new Error('wallet vanished during hold')
      }
      const periods = capPeriods(now.getTime(), caps.timezone)
      const usage = await rows<UsageRow>(client, { name: 'ledger_cap_usage', text: CAP_USAGE, values: [caps.keyId, periods.windowFrom, periods.imageDay] })
      const refused = capRefusal(caps, input.amount, usageOf(usage, periods))
      if (refused !== null) return { ok: false, error: 'cap', cap: refused }
      if (wallet.blocked) return { ok: false, error: 'topup_required' }
      if (wallet.available - input.amount < input.floor) return { ok: false, error: 'insufficient_funds' }
      const holdId = ctx.ids('hold')
      const expiresAt = new Date(now.getTime() + input.ttlMs)
      await client.query({
        name: 'ledger_capped_hold',
        text: CAPPED_HOLD,
        values: [holdId, input.accountId, input.amount.toString(), input.requestId, expiresAt, now, caps.keyId, periods.day, periods.imageDay, caps.images, input.floor.toString()],
      })
      return { ok: true, holdId, expiresAt }
    })
  }

  return {
    async credit (input) {
      checkCredit(input)
      const now = ctx.clock.now()
      return inTransaction(pool, async (client) => {
        try {
          await client.query(
            `INSERT INTO wallets (account_id, balance, held, updated_at) VALUES ($1, 0, 0, $2)
             ON CONFLICT (account_id) DO NOTHING`,
            [input.accountId, now]
          )
        } catch (err) {
          if (pgErrorCode(err) === FOREIGN_KEY_VIOLATION) throw new UnknownAccountError(input.accountId)
          throw err
        }
        await client.query('SELECT 1 FROM wallets WHERE account_id = $1 FOR NO KEY UPDATE', [input.accountId])
        const [credited] = await rows<{ balance: bigint }>(client, {
          text: `WITH e AS (
              INSERT INTO ledger_entries (id, account_id, amount, kind, posting_id, note, created_at)
              VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (posting_id) DO NOTHING RETURNING amount)
            UPDATE wallets w SET balance = w.balance + e.amount, updated_at = $7,
              unrecovered_at = CASE WHEN $4 = 'topup' THEN NULL ELSE w.unrecovered_at END
            FROM e WHERE w.account_id = $2 RETURNING w.balance`,
          values: [ctx.ids('entry'), input.accountId, input.amount.toString(), input.kind, input.postingId, input.note ?? null, now],
        })
        if (credited) return { balance: credited.balance, duplicate: false }
        const [existing] = await rows<{ account_id: string; amount: bigint; kind: string; balance: bigint }>(client, {
          text: `SELECT e.account_id, e.amount, e.kind, w.balance FROM ledger_entries e, wallets w
                 WHERE e.posting_id = $1 AND w.account_id = $2`,
          values: [input.postingId, input.accountId],
        })
        if (!existing) throw new Error(`posting ${input.postingId} conflicted but cannot be read`)
        checkSameCredit(input.postingId, { accountId: existing.account_id, amount: existing.amount, kind: existing.kind }, input)
        return { balance: existing.balance, duplicate: true }
      })
    },

    async hold (input) {
      checkHold(input)
      if (input.caps !== undefined) return await cappedHold(input)
      const expiresAt = new Date(ctx.clock.now().getTime() + input.ttlMs)
      const { accountId, amount, floor, requestId } = input
      return holds.submit({ holdId: ctx.ids('hold'), accountId, amount, floor, requestId, expiresAt })
    },

    async settle (input) {
      checkSettle(input)
      return closes.submit({ holdId: input.holdId, amount: input.amount, requestId: input.requestId, note: input.note ?? null })
    },

    async release (holdId) {
      checkHoldId(holdId)
      const { released, duplicate } = await closes.submit({ holdId, amount: null, requestId: null, note: null })
      return { released, duplicate }
    },

    async renew (holdId, ttlMs): Promise<RenewResult> {
      checkRenew(holdId, ttlMs)
      const [row] = await rows<{ expires_at: Date | null; known: boolean }>(pool, {
        name: 'ledger_renew',
        text: RENEW,
        values: [holdId, ctx.clock.now(), ttlMs],
      })
      if (!row?.known) throw new UnknownHoldError(holdId)
      return row.expires_at === null ? { renewed: false, expiresAt: null } : { renewed: true, expiresAt: row.expires_at }
    },

    async reapExpired () {
      let total = 0
      for (;;) {
        const [row] = await rows<{ expired: number; due: number }>(pool, {
          name: 'ledger_reap',
          text: REAP,
          values: [ctx.clock.now(), REAP_CHUNK],
        })
        total += row?.expired ?? 0
        if ((row?.due ?? 0) < REAP_CHUNK) return total
      }
    },

    async wallet (accountId) {
      const [row] = await rows<{ balance: bigint; held: bigint; unrecovered_at: Date | null }>(pool, {
        text: 'SELECT balance, held, unrecovered_at FROM wallets WHERE account_id = $1',
        values: [accountId],
      })
      const balance = row?.balance ?? 0n
      const held = row?.held ?? 0n
      return { accountId, balance, held, available: balance - held, unrecoveredAt: row?.unrecovered_at ?? null }
    },

    async entries (accountId, { limit, before }) {
      const found = await rows<EntryRow>(pool, {
        text: `SELECT * FROM ledger_entries
               WHERE account_id = $1
                 AND ($2::text IS NULL OR (created_at, id) < (SELECT created_at, id FROM ledger_entries WHERE id = $2))
               ORDER BY created_at DESC, id DESC LIMIT $3`,
        values: [accountId, before ?? null, checkLimit(limit)],
      })
      return found.map((row) => ({
        id: row.id,
        accountId: row.account_id,
        amount: row.amount,
        kind: parseEntryKind(row.kind),
        postingId: row.posting_id,
        holdId: row.hold_id,
        requestId: row.request_id,
        note: row.note,
        overage: row.overage,
        unrecovered: row.unrecovered,
        createdAt: row.created_at,
      }))
    },

    async keyUsage (keyId, fromDay) {
      return await rows<KeyUsageRow>(pool, {
        text: "SELECT kind, period, used, held FROM key_usage WHERE key_id = $1 AND (kind = 'total' OR period >= $2) ORDER BY kind, period",
        values: [keyId, fromDay],
      })
    },

    async resetKeyUsage (keyId) {
      return (await pool.query('UPDATE key_usage SET used = 0 WHERE key_id = $1 AND used <> 0', [keyId])).rowCount ?? 0
    },

    async openHolds (accountId) {
      const found = await rows<{ id: string; amount: bigint; expires_at: Date; request_id: string }>(pool, {
        text: "SELECT id, amount, expires_at, request_id FROM holds WHERE account_id = $1 AND status = 'open' ORDER BY created_at, id",
        values: [accountId],
      })
      return found.map((row) => ({ id: row.id, amount: row.amount, expiresAt: row.expires_at, requestId: row.request_id }))
    },

    async close () {
      await Promise.all([holds.close(), closes.close()])
    },
  }
}
