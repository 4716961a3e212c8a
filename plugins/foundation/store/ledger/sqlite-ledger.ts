// SQLite ledger: the file's write lock serialises holds from every connection and process.
// Holds and settles are group-committed: the calls of one event-loop turn run in one IMMEDIATE
// transaction, so a commit (the WAL write of every page touched) is shared instead of paid per
// call, and each wallet the batch touches is read and written once (see runBatch). A call
// refused before it writes fails alone; any other failure rolls the whole batch back and fails
// every call in it.
import type { Database } from 'better-sqlite3'
import type { StoreContext } from '../context.js'
import { checkLimit } from '../context.js'
import {
  CHARGE_POSTING_PREFIX,
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
import { GroupCommit, type ItemOutcome } from './group-commit.js'
import { capPeriods, capRefusal, usageOf, type CapRefusal, type UsageRow } from './caps.js'
import type { HoldInput, KeyUsageRow, LedgerEntry, LedgerStore, RenewResult, SettleResult } from './types.js'

type SqliteOp =
  | { kind: 'hold', input: HoldInput, at: number, holdId: string }
  | { kind: 'close', holdId: string, amount: bigint | null, requestId: string | null, note: string | null, at: number, lazy: boolean }

interface WalletRow {
  balance: bigint
  held: bigint
  /** The account's bound as stored (null: no hold admitted since migration 013). */
  bound: bigint | null
  unrecovered_at: bigint | null
}

/** A wallet as a batch holds it in memory. */
interface BatchWallet extends WalletRow {
  /**
   * The bound its settles honour: the stored one, or the available balance read at the start
   * of the batch when there is none or it is above that (no admitted hold can leave it there;
   * then the settle posts at most its hold, and what earlier releases of the batch freed).
   */
  effective: bigint
}

interface HoldRow {
  id: string
  account_id: string
  amount: bigint
  status: string
  request_id: string
  expires_at: bigint
  cap_key_id: string | null
  cap_day: string | null
  cap_image_day: string | null
  cap_images: bigint
}

/** The key-cap columns of a closed hold, and how it closed. */
interface ClosedRow {
  amount: bigint
  status: 'released' | 'expired' | 'posted'
  cap_key_id: string | null
  cap_day: string | null
  cap_image_day: string | null
  cap_images: bigint
}

/** What a hold in a batch decided: null = held; else why not. */
type HoldRefusal = 'insufficient_funds' | 'topup_required' | CapRefusal

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
  created_at: bigint
}

/** Runs a wallet insert; a missing account is the caller's mistake, named as such. */
function creatingWallet<T> (accountId: string, insert: () => T): T {
  try {
    return insert()
  } catch (err) {
    const code: unknown = err instanceof Error ? Reflect.get(err, 'code') : undefined
    if (code === 'SQLITE_CONSTRAINT_FOREIGNKEY') throw new UnknownAccountError(accountId)
    throw err
  }
}

function toEntry (row: EntryRow): LedgerEntry {
  return {
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
    createdAt: new Date(Number(row.created_at)),
  }
}

/**
 * How long a lazy charge (a settle with `lazy`: the request path's, whose answer was sent) may
 * wait for company. A commit's cost is its system calls (two writes per page) more than its
 * statements: at one request at a time, a request's charge and the next request's hold, a few
 * hundred microseconds apart, share a commit and the pages both touch (the wallet, the open
 * holds' index) instead of paying for two. A busier gateway fills its batches without waiting.
 * The wait delays the balance another process reads (this one's reads commit it first), never
 * an answer; a gateway that closes, or a process that exits, commits it at once. A settle
 * without `lazy` (a job's end, the CLI, a caller that awaits it) never waits.
 */
export const SETTLE_WAIT_MS = 2

/**
 * The open SQLite ledgers' flushes, run when the process exits (process.exit, an uncaught
 * exception, the end of the event loop): the charges still waiting are committed then, SQLite
 * being synchronous. One listener for every store of the process.
 */
const atExit = new Set<() => void>()
let exitListening = false
function flushAtExit (flush: () => void): () => void {
  if (!exitListening) {
    exitListening = true
    process.on('exit', () => { for (const f of atExit) f() })
  }
  atExit.add(flush)
  return () => { atExit.delete(flush) }
}

export function createSqliteLedgerStore (db: Database, ctx: StoreContext): LedgerStore & { close(): Promise<void> } {
  const walletOf = db.prepare<[string], WalletRow>('SELECT balance, held, bound, unrecovered_at FROM wallets WHERE account_id = ?')
  const ensureWallet = db.prepare<[string, number]>(
    'INSERT INTO wallets (account_id, balance, held, updated_at) VALUES (?, 0, 0, ?) ON CONFLICT (account_id) DO NOTHING'
  )
  const insertEntry = db.prepare<[string, string, bigint, string, string, string | null, string | null, string | null, bigint | null, bigint | null, number]>(
    `INSERT INTO ledger_entries (id, account_id, amount, kind, posting_id, hold_id, request_id, note, overage, unrecovered, created_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (posting_id) DO NOTHING`
  )
  const entryByPosting = db.prepare<[string], EntryRow>('SELECT * FROM ledger_entries WHERE posting_id = ?')
  // A top-up (not a grant) clears the refusal an unrecovered overage set.
  const addBalance = db.prepare<[bigint, string, number, string], WalletRow>(
    `UPDATE wallets SET balance = balance + ?, unrecovered_at = CASE WHEN ? = 'topup' THEN NULL ELSE unrecovered_at END, updated_at = ?
     WHERE account_id = ? RETURNING balance, held, bound, unrecovered_at`
  )
  const insertHold = db.prepare<[string, string, bigint, string, number, number]>(
    `INSERT INTO holds (id, account_id, amount, status, request_id, expires_at, created_at)
     VALUES (?, ?, ?, 'open', ?, ?, ?)`
  )
  const insertCappedHold = db.prepare<[string, string, bigint, string, number, number, string, string, string, number]>(
    `INSERT INTO holds (id, account_id, amount, status, request_id, expires_at, created_at, cap_key_id, cap_day, cap_image_day, cap_images)
     VALUES (?, ?, ?, 'open', ?, ?, ?, ?, ?, ?, ?)`
  )
  // A capped key's buckets: lifetime, the 30-day window of spend days, the images of the UTC day.
  const usageRows = db.prepare<{ key: string, from: string, imageDay: string }, UsageRow>(
    `SELECT kind, period, used + held AS amount FROM key_usage
     WHERE key_id = @key AND (kind = 'total' OR (kind = 'spend' AND period >= @from) OR (kind = 'images' AND period = @imageDay))`
  )
  const reserve = db.prepare<[string, string, string, bigint]>(
    `INSERT INTO key_usage (key_id, kind, period, used, held) VALUES (?, ?, ?, 0, ?)
     ON CONFLICT (key_id, kind, period) DO UPDATE SET held = held + excluded.held`
  )
  const giveBack = db.prepare<[bigint, bigint, string, string, string]>(
    'UPDATE key_usage SET held = held - ?, used = used + ? WHERE key_id = ? AND kind = ? AND period = ?'
  )
  const usageFrom = db.prepare<[string, string], { kind: KeyUsageRow['kind'], period: string, used: bigint, held: bigint }>(
    "SELECT kind, period, used, held FROM key_usage WHERE key_id = ? AND (kind = 'total' OR period >= ?) ORDER BY kind, period"
  )
  const resetUsage = db.prepare<[string]>('UPDATE key_usage SET used = 0 WHERE key_id = ? AND used <> 0')
  // The columns a close reads, not the whole row (a settle's first statement).
  const holdById = db.prepare<[string], HoldRow>(
    'SELECT id, account_id, amount, status, request_id, expires_at, cap_key_id, cap_day, cap_image_day, cap_images FROM holds WHERE id = ?'
  )
  // The closes bind by position: a named parameter costs better-sqlite3 a property lookup by
  // name on the object (and a check that it is its own), an array element does not.
  type Closing = [status: string, now: number, used: bigint | null, overage: bigint | null, unrecovered: bigint | null, id: string]
  const closeHold = db.prepare<Closing>(
    `UPDATE holds SET status = ?, settled_at = ?, posted_amount = ?, overage = ?, unrecovered = ?
     WHERE id = ? AND status = 'open'`
  )
  // The close of a hold this process opened, decided from the row as it was written: it changes
  // the hold only if it is still open with that expiry (see `opened`).
  const closeOpened = db.prepare<[...Closing, expires: bigint]>(
    `UPDATE holds SET status = ?, settled_at = ?, posted_amount = ?, overage = ?, unrecovered = ?
     WHERE id = ? AND status = 'open' AND expires_at = ?`
  )
  const moveHeld = db.prepare<[bigint, bigint, number, string]>(
    'UPDATE wallets SET held = held - ?, balance = balance - ?, updated_at = ? WHERE account_id = ?'
  )
  const setWallet = db.prepare<[bigint, bigint, bigint | null, bigint | null, number, string]>(
    'UPDATE wallets SET balance = ?, held = ?, bound = ?, unrecovered_at = ?, updated_at = ? WHERE account_id = ?'
  )
  // Only an open hold whose expiry is still ahead moves, and never backwards. It runs outside
  // the group-committed batches: one row, and no wallet changes.
  const extendHold = db.prepare<{ id: string, now: number, until: number }, { expires_at: bigint }>(
    `UPDATE holds SET expires_at = MAX(expires_at, @until)
     WHERE id = @id AND status = 'open' AND expires_at > @now
     RETURNING expires_at`
  )
  const dueHolds = db.prepare<[number], HoldRow>(
    "SELECT * FROM holds WHERE status = 'open' AND expires_at <= ? ORDER BY expires_at"
  )
  const page = db.prepare<[string, string | null, string | null, number], EntryRow>(
    `SELECT * FROM ledger_entries
     WHERE account_id = ? AND (? IS NULL OR (created_at, id) < (SELECT created_at, id FROM ledger_entries WHERE id = ?))
     ORDER BY created_at DESC, id DESC LIMIT ?`
  )
  const openOf = db.prepare<[string], HoldRow>(
    "SELECT * FROM holds WHERE account_id = ? AND status = 'open' ORDER BY created_at, id"
  )

  /**
   * The holds this process opened and has not closed, as written (only an open hold's expiry
   * may change afterwards, and only through `renew`, which updates it here). A close reads its
   * row from here instead of from the table: one statement less per settle. The close's UPDATE
   * checks the hold is still open with that expiry; when it is not (closed or renewed by another
   * process, reaped, or its batch rolled back), the close reads the table as for any other hold.
   * Entries leave at their close, or once their expiry has passed (the reaper's sweep).
   */
  const opened = new Map<string, HoldRow>()

  const credit = db.transaction(
    (input: Parameters<LedgerStore['credit']>[0], now: number): { balance: bigint; duplicate: boolean } => {
      creatingWallet(input.accountId, () => ensureWallet.run(input.accountId, now))
      const inserted = insertEntry.run(
        ctx.ids('entry'), input.accountId, input.amount, input.kind, input.postingId, null, null, input.note ?? null, null, null, now
      )
      if (inserted.changes === 0) {
        const existing = entryByPosting.get(input.postingId)
        if (!existing) throw new Error(`posting ${input.postingId} conflicted but cannot be read`)
        checkSameCredit(input.postingId, { accountId: existing.account_id, amount: existing.amount, kind: existing.kind }, input)
        return { balance: walletOf.get(input.accountId)?.balance ?? 0n, duplicate: true }
      }
      const wallet = addBalance.get(input.amount, input.kind, now, input.accountId)
      if (!wallet) throw new Error('wallet vanished during credit')
      return { balance: wallet.balance, duplicate: false }
    }
  )

  // The bodies of a hold and a close. Their only expected failures (UnknownAccountError,
  // UnknownHoldError) are thrown before they write anything, so a batch runs them without a
  // savepoint each; any other failure is a database error and aborts the whole batch.
  //
  // A batch reads each wallet it touches once, applies its holds and closes to it in memory, in
  // order, and writes it once at the end: the batch holds the database's write lock from its
  // first read to its commit, so the result is the same as one UPDATE per call, for one
  // statement per wallet instead of one per call.
  /** The wallets of one batch, as read at its start and changed by its calls so far. */
  interface Wallets { rows: Map<string, BatchWallet>, changed: Set<string> }

  /** The account's wallet in this batch (read on first use), to be written back at its end. */
  const walletIn = (wallets: Wallets, accountId: string): BatchWallet | undefined => {
    let wallet = wallets.rows.get(accountId)
    if (!wallet) {
      const row = walletOf.get(accountId)
      if (!row) return undefined
      const available = row.balance - row.held
      wallet = { ...row, effective: row.bound === null || row.bound > available ? available : row.bound }
      wallets.rows.set(accountId, wallet)
    }
    return wallet
  }

  const hold = (wallets: Wallets, input: HoldInput, now: number, holdId: string): HoldRefusal | null => {
    const caps = input.caps
    // The caps are read inside the batch's write transaction: every earlier hold and close of
    // the batch (and of every other process) is already in the buckets.
    const periods = caps === undefined ? undefined : capPeriods(now, caps.timezone)
    if (caps !== undefined && periods !== undefined) {
      const refused = capRefusal(caps, input.amount, usageOf(usageRows.all({ key: caps.keyId, from: periods.windowFrom, imageDay: periods.imageDay }), periods))
      if (refused !== null) return refused
    }
    let wallet = walletIn(wallets, input.accountId)
    if (!wallet) {
      // No wallet row is a balance of 0; it is created only when the hold fits anyway.
      if (-input.amount < input.floor) return 'insufficient_funds'
      creatingWallet(input.accountId, () => ensureWallet.run(input.accountId, now))
      wallet = { balance: 0n, held: 0n, bound: null, unrecovered_at: null, effective: 0n }
      wallets.rows.set(input.accountId, wallet)
    }
    if (wallet.unrecovered_at !== null) return 'topup_required'
    if (wallet.balance - wallet.held - input.amount < input.floor) return 'insufficient_funds'
    wallet.held += input.amount
    // Admitted: balance − held ≥ floor now, so the account's settles may go down to it.
    wallet.bound = input.floor
    wallet.effective = input.floor
    wallets.changed.add(input.accountId)
    const expiresAt = now + input.ttlMs
    const capped = caps !== undefined && periods !== undefined
    opened.set(holdId, {
      id: holdId,
      account_id: input.accountId,
      amount: input.amount,
      status: 'open',
      request_id: input.requestId,
      expires_at: BigInt(expiresAt),
      cap_key_id: capped ? caps.keyId : null,
      cap_day: capped ? periods.day : null,
      cap_image_day: capped ? periods.imageDay : null,
      cap_images: capped ? BigInt(caps.images) : 0n,
    })
    if (!capped) {
      insertHold.run(holdId, input.accountId, input.amount, input.requestId, expiresAt, now)
      return null
    }
    insertCappedHold.run(holdId, input.accountId, input.amount, input.requestId, expiresAt, now, caps.keyId, periods.day, periods.imageDay, caps.images)
    reserve.run(caps.keyId, 'total', '', input.amount)
    reserve.run(caps.keyId, 'spend', periods.day, input.amount)
    if (caps.images > 0) reserve.run(caps.keyId, 'images', periods.imageDay, BigInt(caps.images))
    return null
  }

  /** A capped hold closed: its reservation leaves `held`; what was posted (and its images) goes to `used`. */
  const unreserve = (row: ClosedRow, posted: bigint): void => {
    if (row.cap_key_id === null || row.cap_day === null) return
    giveBack.run(row.amount, posted, row.cap_key_id, 'total', '')
    giveBack.run(row.amount, posted, row.cap_key_id, 'spend', row.cap_day)
    if (row.cap_images > 0n && row.cap_image_day !== null) {
      giveBack.run(row.cap_images, row.status === 'posted' ? row.cap_images : 0n, row.cap_key_id, 'images', row.cap_image_day)
    }
  }

  /**
   * Closes one open hold; `amount` null releases it. The hold is read first (one lookup by its
   * key; a missing or closed one changes nothing), then the charge is decided against the
   * account's wallet as this batch has it: at most the hold plus the wallet's slack above its
   * bound, so the other open holds stay backed. One UPDATE records how the hold ended (with
   * the part of it the charge used, the overage and the unrecovered part); one insert writes
   * the charge entry.
   */
  const close = (wallets: Wallets, holdId: string, amount: bigint | null, requestId: string | null, note: string | null, now: number): SettleResult => {
    const mine = opened.get(holdId)
    if (mine !== undefined) opened.delete(holdId)
    const row = mine ?? holdById.get(holdId)
    if (!row) throw new UnknownHoldError(holdId)
    if (row.status !== 'open') return { posted: 0n, released: 0n, overage: 0n, unrecovered: 0n, duplicate: true }
    // A hold's account always has a wallet row (holds reference it).
    const wallet = walletIn(wallets, row.account_id)
    if (!wallet) throw new Error(`wallet of hold ${holdId} vanished`)
    const status = amount === null ? 'released' : BigInt(now) >= row.expires_at ? 'expired' : 'posted'
    let posted = 0n
    let unrecovered = 0n
    if (status === 'posted' && amount !== null) {
      const slack = wallet.balance - wallet.held - wallet.effective
      const most = row.amount + (slack > 0n ? slack : 0n)
      posted = amount < most ? amount : most
      unrecovered = amount - posted
    }
    const used = posted < row.amount ? posted : row.amount
    const overage = posted - used
    const usedOrNull = status === 'posted' ? used : null
    const overageOrNull = overage > 0n ? overage : null
    const unrecoveredOrNull = unrecovered > 0n ? unrecovered : null
    if (mine === undefined) closeHold.run(status, now, usedOrNull, overageOrNull, unrecoveredOrNull, holdId)
    else if (closeOpened.run(status, now, usedOrNull, overageOrNull, unrecoveredOrNull, holdId, row.expires_at).changes === 0) {
      // Not as this process wrote it: decide again from the table.
      return close(wallets, holdId, amount, requestId, note, now)
    }
    if (status === 'posted') {
      insertEntry.run(
        ctx.ids('entry'), row.account_id, -posted, 'charge', CHARGE_POSTING_PREFIX + holdId, holdId, requestId, note,
        overage > 0n ? overage : null, unrecovered > 0n ? unrecovered : null, now
      )
    }
    wallet.held -= row.amount
    wallet.balance -= posted
    if (unrecovered > 0n) wallet.unrecovered_at = BigInt(now)
    wallets.changed.add(row.account_id)
    unreserve({ ...row, status }, posted)
    return { posted, released: row.amount - used, overage, unrecovered, duplicate: false }
  }

  const reap = db.transaction((now: number): number => {
    for (const [id, row] of opened) if (row.expires_at <= BigInt(now)) opened.delete(id)
    const due = dueHolds.all(now)
    for (const row of due) {
      closeHold.run('expired', now, null, null, null, row.id)
      moveHeld.run(row.amount, 0n, now, row.account_id)
      unreserve({ ...row, status: 'expired' }, 0n)
    }
    return due.length
  })

  const runBatch = db.transaction((ops: SqliteOp[]): Array<ItemOutcome<HoldRefusal | null | SettleResult>> => {
    const wallets: Wallets = { rows: new Map(), changed: new Set() }
    const outcomes = ops.map((op): ItemOutcome<HoldRefusal | null | SettleResult> => {
      try {
        const value = op.kind === 'hold'
          ? hold(wallets, op.input, op.at, op.holdId)
          : close(wallets, op.holdId, op.amount, op.requestId, op.note, op.at)
        return { kind: 'done', value }
      } catch (err) {
        // Refused before writing: this call fails alone. Anything else rolls the batch back.
        if (err instanceof UnknownAccountError || err instanceof UnknownHoldError) return { kind: 'failed', error: err }
        throw err
      }
    })
    const at = ops.reduce((latest, op) => Math.max(latest, op.at), 0)
    for (const accountId of wallets.changed) {
      const wallet = wallets.rows.get(accountId)
      if (wallet) setWallet.run(wallet.balance, wallet.held, wallet.bound, wallet.unrecovered_at, at, accountId)
    }
    return outcomes
  })
  const batches = new GroupCommit<SqliteOp, HoldRefusal | null | SettleResult>(
    async (ops) => runBatch.immediate(ops),
    {
      maxBatch: 500,
      maxInFlight: 1,
      schedule: 'immediate',
      // A lazy charge waits up to SETTLE_WAIT_MS for the next hold (nobody waits on it: its
      // answer was sent), so that one commit carries both; holds, releases and other settles
      // never wait.
      lazy: { ms: SETTLE_WAIT_MS, item: (op) => op.kind === 'close' && op.lazy },
    }
  )

  // Starting the waiting batch runs it synchronously: committed before the process is gone.
  const unlisten = flushAtExit(() => { batches.flush().catch(() => {}) })

  const now = (): number => ctx.clock.now().getTime()

  return {
    async credit (input) {
      checkCredit(input)
      // Every read and out-of-batch write first commits the charges still waiting (see
      // SETTLE_WAIT_MS): what this process answered is what it reads.
      await batches.flush()
      return credit.immediate(input, now())
    },

    async hold (input) {
      checkHold(input)
      const at = now()
      const holdId = ctx.ids('hold')
      const refused = await batches.submit({ kind: 'hold', input, at, holdId }) as HoldRefusal | null
      if (refused === 'insufficient_funds' || refused === 'topup_required') return { ok: false, error: refused }
      if (refused !== null) return { ok: false, error: 'cap', cap: refused }
      return { ok: true, holdId, expiresAt: new Date(at + input.ttlMs) }
    },

    async settle (input) {
      checkSettle(input)
      return await batches.submit({ kind: 'close', holdId: input.holdId, amount: input.amount, requestId: input.requestId, note: input.note ?? null, at: now(), lazy: input.lazy === true }) as SettleResult
    },

    async release (holdId) {
      checkHoldId(holdId)
      const { released, duplicate } = await batches.submit({ kind: 'close', holdId, amount: null, requestId: null, note: null, at: now(), lazy: false }) as SettleResult
      return { released, duplicate }
    },

    async renew (holdId, ttlMs): Promise<RenewResult> {
      checkRenew(holdId, ttlMs)
      const at = now()
      const row = extendHold.get({ id: holdId, now: at, until: at + ttlMs })
      if (row) {
        const mine = opened.get(holdId)
        if (mine !== undefined) mine.expires_at = row.expires_at
        return { renewed: true, expiresAt: new Date(Number(row.expires_at)) }
      }
      if (!holdById.get(holdId)) throw new UnknownHoldError(holdId)
      return { renewed: false, expiresAt: null }
    },

    async reapExpired () {
      await batches.flush()
      return reap.immediate(now())
    },

    async wallet (accountId) {
      await batches.flush()
      const row = walletOf.get(accountId)
      const balance = row?.balance ?? 0n
      const held = row?.held ?? 0n
      const at = row?.unrecovered_at ?? null
      return { accountId, balance, held, available: balance - held, unrecoveredAt: at === null ? null : new Date(Number(at)) }
    },

    async entries (accountId, { limit, before }) {
      await batches.flush()
      return page.all(accountId, before ?? null, before ?? null, checkLimit(limit)).map(toEntry)
    },

    /** Answers every queued hold and settle before the database closes. */
    async close () {
      await batches.close()
      unlisten()
    },

    async keyUsage (keyId, fromDay) {
      await batches.flush()
      return usageFrom.all(keyId, fromDay)
    },

    async resetKeyUsage (keyId) {
      await batches.flush()
      return resetUsage.run(keyId).changes
    },

    async openHolds (accountId) {
      await batches.flush()
      return openOf.all(accountId).map((row) => ({
        id: row.id,
        amount: row.amount,
        expiresAt: new Date(Number(row.expires_at)),
        requestId: row.request_id,
      }))
    },
  }
}
