// The account and key service: the operators' operations, shared by the admin HTTP API, the CLI
// and (for an account's own keys and wallet) the console: input arrives as
// untrusted JSON (`unknown`), is validated here once, and every refusal is a catalogue code.
//
// Missing resources: a key answers AUTH_API_KEY_NOT_FOUND (404, param `key_id`). The catalogue
// has no account-not-found code, so a missing account answers REQUEST_ROUTE_NOT_FOUND (404,
// param `account_id`): the resource the path names does not exist.
import { randomUUID } from 'node:crypto'
import type { GatewayConfig } from '../../foundation/config/types.js'
import { formatMoney, parseMoney } from '../../foundation/pricing/money.js'
import { gatewayError } from '../../foundation/errors/index.js'
import { isLegacyKey } from '../../foundation/keys/index.js'
import type { Account, AccountPatch, ApiKeyRecord, Clock, KeyInputContext, KeyInputError, Store } from '../../foundation/store/index.js'
import { InvalidCursorError, PostingConflictError, systemClock, validateKeyInput, validateKeyPatch } from '../../foundation/store/index.js'
import { MAX_LEDGER_AMOUNT } from '../../foundation/store/ledger/index.js'
import { overdraftOf } from '../wallet/bound.js'
import { createWallet } from '../wallet/wallet.js'
import { DEFAULT_PAGE_LIMIT, MAX_PAGE_LIMIT, MINOR_UNIT_DIGITS } from './constants.js'
import {
  type AccountView,
  type KeyView,
  type Page,
  type RevealedKeyView,
  accountView,
  keyView,
  type RequestLogView,
  requestLogView,
} from './views.js'

export interface AdminContext {
  readonly store: Store
  readonly config: GatewayConfig
  readonly now: () => Date
  /**
   * Writes the request log rows this process has queued (the gateway batches them every
   * ~100 ms), so a listing made right after an answer shows it. Absent: nothing is queued here.
   */
  readonly flushRequestLog?: (() => Promise<void>) | undefined
}

/** `config` may be a reader of the config in force (the admin listener of `serve` follows reloads). */
export function adminContext (store: Store, config: GatewayConfig | (() => GatewayConfig), clock: Clock = systemClock, flushRequestLog?: () => Promise<void>): AdminContext {
  const flush = flushRequestLog === undefined ? {} : { flushRequestLog }
  if (typeof config !== 'function') return { store, config, now: () => clock.now(), ...flush }
  return { store, get config () { return config() }, now: () => clock.now(), ...flush }
}

// ---- input helpers -----------------------------------------------------------------------

const MAX_NAME = 100
// eslint-disable-next-line no-control-regex -- finding control characters is this pattern's job
const CONTROL = /[\u0000-\u001f\u007f]/
const ACCOUNT_FIELDS = new Set(['name', 'tier', 'status', 'allowed_models'])

function requestInvalid (param: string, detail: string): Error {
  return gatewayError('REQUEST_INVALID', { param, detail })
}

function bodyObject (body: unknown): Map<string, unknown> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw requestInvalid('body', 'The body must be a JSON object.')
  }
  return new Map(Object.entries(body))
}

function onlyFields (body: Map<string, unknown>, allowed: ReadonlySet<string>): void {
  for (const field of body.keys()) {
    if (!allowed.has(field)) throw requestInvalid(field, `Unknown field ${JSON.stringify(field)}.`)
  }
}

/** An account's `allowed_models`: null (every model) or a non-empty list of distinct known model ids. */
function accountModels (ctx: AdminContext, v: unknown): string[] | null {
  if (v === null) return null
  if (!Array.isArray(v) || v.length === 0) throw requestInvalid('allowed_models', 'allowed_models must be a non-empty array of model ids, or null for all models.')
  const known = new Set(ctx.config.models.map((m) => m.id))
  const seen = new Set<string>()
  for (const id of v) {
    if (typeof id !== 'string' || !known.has(id)) throw requestInvalid('allowed_models', `unknown model ${JSON.stringify(id)}.`)
    if (seen.has(id)) throw requestInvalid('allowed_models', `duplicate model ${JSON.stringify(id)}.`)
    seen.add(id)
  }
  return [...seen]
}

function accountName (v: unknown): string {
  if (typeof v !== 'string') throw requestInvalid('name', 'name must be a string.')
  const name = v.trim()
  if (name === '') throw requestInvalid('name', 'name must not be empty.')
  if ([...name].length > MAX_NAME) throw requestInvalid('name', `name must be at most ${MAX_NAME} characters.`)
  if (CONTROL.test(name)) throw requestInvalid('name', 'name must not contain control characters.')
  return name
}

function tierName (ctx: AdminContext, v: unknown): string {
  const tiers = ctx.config.limits.tiers
  if (typeof v !== 'string' || !Object.hasOwn(tiers, v)) {
    throw requestInvalid('tier', `tier must be one of ${Object.keys(tiers).join(', ')}.`)
  }
  return v
}

function keyInputContext (ctx: AdminContext, account: Account): KeyInputContext {
  return {
    tiers: ctx.config.limits.tiers,
    accountTier: account.tier,
    knownModels: new Set(ctx.config.models.map((m) => m.id)),
    now: ctx.now(),
    minorUnitDigits: MINOR_UNIT_DIGITS,
  }
}

function keyInputError (e: KeyInputError): Error {
  const detail =
    e.code === 'LIMIT_API_KEY_POLICY_NOT_ALLOWED'
      ? `${e.reason.charAt(0).toUpperCase()}${e.reason.slice(1)}.`
      : `${e.field === 'body' ? 'The body' : e.field} ${e.reason}.`
  return gatewayError(e.code, { param: e.field, detail })
}

function accountNotFound (): Error {
  return gatewayError('REQUEST_ROUTE_NOT_FOUND', { param: 'account_id', detail: 'Account not found.' })
}

export function keyNotFound (): Error {
  return gatewayError('AUTH_API_KEY_NOT_FOUND', { param: 'key_id' })
}

function keyRevoked (): Error {
  return gatewayError('AUTH_API_KEY_REVOKED', { param: 'key_id' })
}

async function existingAccount (ctx: AdminContext, id: string): Promise<Account> {
  const account = await ctx.store.accounts.get(id)
  if (!account) throw accountNotFound()
  return account
}

async function existingKey (ctx: AdminContext, id: string): Promise<ApiKeyRecord> {
  const key = await ctx.store.keys.get(id)
  if (!key) throw keyNotFound()
  return key
}

/** A page's `limit` (a query string or a number): DEFAULT_PAGE_LIMIT when absent, else 1–MAX_PAGE_LIMIT or REQUEST_INVALID. */
export function pageLimit (v: unknown): number {
  if (v === undefined) return DEFAULT_PAGE_LIMIT
  const n = typeof v === 'number' ? v : typeof v === 'string' && /^\d{1,7}$/.test(v) ? Number(v) : NaN
  if (!Number.isInteger(n) || n < 1 || n > MAX_PAGE_LIMIT) {
    throw requestInvalid('limit', `limit must be an integer from 1 to ${MAX_PAGE_LIMIT}.`)
  }
  return n
}

// ---- accounts ----------------------------------------------------------------------------

/** `{ name, tier? }`; the tier defaults to `limits.default_tier`. */
export async function createAccount (ctx: AdminContext, body: unknown): Promise<AccountView> {
  const input = bodyObject(body)
  onlyFields(input, new Set(['name', 'tier']))
  const name = accountName(input.get('name'))
  const tier = input.get('tier') === undefined ? ctx.config.limits.default_tier : tierName(ctx, input.get('tier'))
  return accountView(await ctx.store.accounts.create({ name, tier }))
}

/** Oldest first; `after` is the `next_after` of the previous page. */
export async function listAccounts (ctx: AdminContext, query: unknown = {}): Promise<Page<AccountView>> {
  const input = bodyObject(query)
  onlyFields(input, new Set(['limit', 'after']))
  const limit = pageLimit(input.get('limit'))
  const after = input.get('after')
  if (after !== undefined && (typeof after !== 'string' || after === '')) {
    throw requestInvalid('after', 'after must be an account id.')
  }
  // An unknown cursor would silently read as an empty last page.
  if (after !== undefined && !(await ctx.store.accounts.get(after))) {
    throw requestInvalid('after', 'after names no account.')
  }
  const rows = await ctx.store.accounts.list({ limit, ...(after === undefined ? {} : { after }) })
  const last = rows[rows.length - 1]
  // A full page may be the last one: one more row after it says (a store page is at most 1000 rows).
  const hasMore = rows.length === limit && last !== undefined && (await ctx.store.accounts.list({ limit: 1, after: last.id })).length > 0
  return { data: rows.map(accountView), has_more: hasMore, next_after: hasMore ? (last?.id ?? null) : null }
}

export async function getAccount (ctx: AdminContext, id: string): Promise<AccountView> {
  return accountView(await existingAccount(ctx, id))
}

/**
 * `{ name?, status?: "active" | "suspended", tier? }`. Lowering the tier leaves existing key
 * policies as they are: the limits stage resolves a key's policy no higher than its account's tier.
 */
export async function updateAccount (ctx: AdminContext, id: string, body: unknown): Promise<AccountView> {
  const input = bodyObject(body)
  onlyFields(input, ACCOUNT_FIELDS)
  const patch: AccountPatch = {}
  if (input.get('name') !== undefined) patch.name = accountName(input.get('name'))
  if (input.get('tier') !== undefined) patch.tier = tierName(ctx, input.get('tier'))
  if (input.has('allowed_models')) patch.allowedModels = accountModels(ctx, input.get('allowed_models'))
  const status = input.get('status')
  if (status !== undefined) {
    if (status !== 'active' && status !== 'suspended') {
      throw requestInvalid('status', 'status must be "active" or "suspended".')
    }
    patch.status = status
  }
  const result = await ctx.store.accounts.update(id, patch)
  if (!result.ok) throw accountNotFound()
  return accountView(result.value)
}

// ---- keys --------------------------------------------------------------------------------

/** The account holds `limits.max_keys_per_account` keys that are not revoked. */
function keyCapReached (max: number): Error {
  return gatewayError('LIMIT_API_KEY_COUNT_EXCEEDED', { detail: `An account may hold at most ${max} API keys that are not revoked; revoke one to make room.` })
}

/**
 * A new `sk-` key; the answer is the only one besides reveal that carries the plaintext. The
 * admin API, the CLI and the console all create keys here, and the store counts the account's
 * keys against `limits.max_keys_per_account` in the transaction that inserts the new one.
 */
export async function createKey (ctx: AdminContext, accountId: string, body: unknown): Promise<RevealedKeyView> {
  const account = await existingAccount(ctx, accountId)
  const fields = validateKeyInput(body, keyInputContext(ctx, account))
  if (!fields.ok) throw keyInputError(fields)
  const maxKeys = ctx.config.limits.max_keys_per_account
  const created = await ctx.store.keys.create({ accountId, ...fields.value }, { maxKeys })
  if (!created.ok) throw created.error === 'key_cap_reached' ? keyCapReached(maxKeys) : accountNotFound()
  return { ...keyView(created.value.record, ctx.now()), key: created.value.plaintext }
}

/** Every key of the account, oldest first, revoked ones included. */
export async function listKeys (ctx: AdminContext, accountId: string): Promise<Page<KeyView>> {
  await existingAccount(ctx, accountId)
  const now = ctx.now()
  const data = (await ctx.store.keys.listByAccount(accountId)).map((k) => keyView(k, now))
  return { data, has_more: false, next_after: null }
}

export async function getKey (ctx: AdminContext, id: string): Promise<KeyView> {
  return keyView(await existingKey(ctx, id), ctx.now())
}

/** Any subset of the create fields; null clears a nullable one. A revoked key is final. */
export async function updateKey (ctx: AdminContext, id: string, body: unknown): Promise<KeyView> {
  const key = await existingKey(ctx, id)
  if (key.revokedAt !== null) throw keyRevoked()
  const patch = validateKeyPatch(body, keyInputContext(ctx, await existingAccount(ctx, key.accountId)))
  if (!patch.ok) throw keyInputError(patch)
  const result = await ctx.store.keys.update(id, patch.value)
  if (!result.ok) throw result.error === 'revoked' ? keyRevoked() : keyNotFound()
  return keyView(result.value, ctx.now())
}

/** Idempotent: revoking a revoked key answers it unchanged (the first revoked_at stays). */
export async function revokeKey (ctx: AdminContext, id: string): Promise<KeyView> {
  const result = await ctx.store.keys.revoke(id)
  if (!result.ok) throw keyNotFound()
  return keyView(result.value, ctx.now())
}

export async function revealKey (ctx: AdminContext, id: string): Promise<RevealedKeyView> {
  const key = await existingKey(ctx, id)
  const result = await ctx.store.keys.reveal(id)
  if (!result.ok) {
    if (result.error === 'revoked') throw keyRevoked()
    if (result.error === 'not_revealable') throw gatewayError('AUTH_API_KEY_NOT_REVEALABLE', { param: 'key_id' })
    throw keyNotFound()
  }
  return { ...keyView(key, ctx.now()), key: result.value }
}

/**
 * `{ key: "gw_live_…", name, ...create fields }`: registers a key of the old system by its
 * hash only. The answer never echoes the plaintext, and the key can never be revealed.
 */
export async function importLegacyKey (ctx: AdminContext, accountId: string, body: unknown): Promise<KeyView> {
  const account = await existingAccount(ctx, accountId)
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw gatewayError('AUTH_API_KEY_CONFIGURATION_INVALID', { param: 'body', detail: 'The body must be a JSON object.' })
  }
  const { key, ...rest } = body as Record<string, unknown>
  if (typeof key !== 'string' || !isLegacyKey(key)) {
    const detail = key === undefined ? 'key is required: the gw_live_ key to import.' : 'key must be a legacy gw_live_ key.'
    throw gatewayError('AUTH_API_KEY_CONFIGURATION_INVALID', { param: 'key', detail })
  }
  const fields = validateKeyInput(rest, keyInputContext(ctx, account))
  if (!fields.ok) throw keyInputError(fields)
  const maxKeys = ctx.config.limits.max_keys_per_account
  const result = await ctx.store.keys.importLegacy(accountId, key, fields.value, { maxKeys })
  if (!result.ok) {
    if (result.error === 'account_not_found') throw accountNotFound()
    if (result.error === 'key_cap_reached') throw keyCapReached(maxKeys)
    const detail = result.error === 'duplicate' ? 'This key is already registered.' : 'key must be a legacy gw_live_ key.'
    throw gatewayError('AUTH_API_KEY_CONFIGURATION_INVALID', { param: 'key', detail })
  }
  return keyView(result.value, ctx.now())
}

// ---- tiers -------------------------------------------------------------------------------

export interface TierView {
  name: string
  rank: number
  requests_per_minute: number
  concurrent_streams: number
}

/** The rate-limit tiers of `limits.tiers`, lowest rank first (docs/limits.md). */
export function listTiers (ctx: AdminContext): { data: TierView[] } {
  const data = Object.entries(ctx.config.limits.tiers)
    .map(([name, t]) => ({ name, rank: t.rank, requests_per_minute: t.requests_per_minute, concurrent_streams: t.concurrent_streams }))
    .sort((a, b) => a.rank - b.rank || (a.name < b.name ? -1 : 1))
  return { data }
}

// ---- wallet and request log --------------------------------------------------------------

const CREDIT_FIELDS = new Set(['amount', 'kind', 'idempotency_key', 'note'])

/**
 * Largest single credit, in currency units: the ledger moves at most 10^18 nano-units (10^9
 * units) in one posting, so that no sum of a few postings can leave PostgreSQL's and SQLite's
 * signed 64-bit integers (about 9.22 * 10^18 nano-units).
 */
export const MAX_CREDIT_UNITS = 1_000_000_000
/**
 * Largest balance a credit may produce, in nano-units (5 * 10^9 units): the int64 columns hold
 * about 9.22 * 10^18, so even four maximal credits racing past this check cannot overflow them.
 */
export const MAX_BALANCE = 5n * 10n ** 18n

export interface WalletView {
  account_id: string
  balance: string
  held: string
  available: string
  floor: string
  /** The overdraft of the account's tier: its balance may go down to floor − overdraft. */
  overdraft: string
  /** When a reported cost last went beyond the bound; while set, every request is refused until a top-up (not a grant). */
  unrecovered_at: string | null
  topped_up: boolean
}

async function walletView (ctx: AdminContext, account: Account): Promise<WalletView> {
  const w = await ctx.store.ledger.wallet(account.id)
  return {
    account_id: account.id,
    balance: formatMoney(w.balance),
    held: formatMoney(w.held),
    available: formatMoney(w.available),
    floor: formatMoney(parseMoney(ctx.config.wallet.floor)),
    overdraft: formatMoney(overdraftOf(ctx.config.limits, account.tier)),
    unrecovered_at: w.unrecoveredAt?.toISOString() ?? null,
    topped_up: account.toppedUp
  }
}

/**
 * `{ amount: "25.00", kind?: "topup" | "grant", idempotency_key?, note? }`. A top-up (the default)
 * unlocks models that require one; a grant is credit the operator gives and does not. With an
 * idempotency key, a retried credit changes nothing.
 */
export async function creditAccount (ctx: AdminContext, id: string, body: unknown): Promise<WalletView> {
  const account = await existingAccount(ctx, id)
  const fields = bodyObject(body)
  onlyFields(fields, CREDIT_FIELDS)
  const raw = fields.get('amount')
  let amount: bigint
  try {
    if (typeof raw !== 'string') throw new Error('not a string')
    amount = parseMoney(raw)
  } catch {
    throw requestInvalid('amount', 'amount must be a decimal string such as "25.00" (at most 9 decimals).')
  }
  if (amount <= 0n) throw requestInvalid('amount', 'amount must be more than 0.')
  if (amount > MAX_LEDGER_AMOUNT) throw requestInvalid('amount', `amount must be at most ${MAX_CREDIT_UNITS} per credit.`)
  const kind = fields.get('kind') ?? 'topup'
  if (kind !== 'topup' && kind !== 'grant') throw requestInvalid('kind', 'kind must be "topup" or "grant".')
  const key = fields.get('idempotency_key')
  if (key !== undefined && (typeof key !== 'string' || !/^[\x21-\x7e]{1,200}$/.test(key))) {
    throw requestInvalid('idempotency_key', 'idempotency_key must be 1 to 200 visible ASCII characters.')
  }
  const note = fields.get('note')
  if (note !== undefined && (typeof note !== 'string' || note.length > 500)) throw requestInvalid('note', 'note must be a string of at most 500 characters.')
  // PostgreSQL refuses a NUL in text (this answered 500 there and 200 on SQLite).
  if (typeof note === 'string' && CONTROL.test(note)) throw requestInvalid('note', 'note must not contain control characters.')
  const postingId = `credit:${account.id}:${key ?? randomUUID()}`
  const before = await ctx.store.ledger.wallet(account.id)
  if (before.balance + amount > MAX_BALANCE) {
    throw requestInvalid('amount', `This credit would take the balance above ${formatMoney(MAX_BALANCE)}, the most one account may hold.`)
  }
  try {
    // Through the wallet, the ledger's one writer.
    await createWallet({ ledger: ctx.store.ledger }).credit({ accountId: account.id, amount, kind, postingId, ...(note === undefined ? {} : { note }) })
  } catch (err) {
    // The ledger refuses a posting id reused for another amount or kind: a client bug, not a retry.
    if (key !== undefined && err instanceof PostingConflictError) {
      throw requestInvalid('idempotency_key', 'This idempotency key was used for a different credit.')
    }
    throw err
  }
  const after = kind === 'topup' ? await markToppedUp(ctx, account) : account
  return await walletView(ctx, after)
}

async function markToppedUp (ctx: AdminContext, account: Account): Promise<Account> {
  if (account.toppedUp) return account
  const r = await ctx.store.accounts.markToppedUp(account.id)
  return r.ok ? r.value : account
}

export async function getWallet (ctx: AdminContext, id: string): Promise<WalletView> {
  return await walletView(ctx, await existingAccount(ctx, id))
}

function dateParam (name: string, v: unknown): Date | undefined {
  if (v === undefined) return undefined
  const d = typeof v === 'string' ? new Date(v) : new Date(NaN)
  if (Number.isNaN(d.getTime())) throw requestInvalid(name, `${name} must be an ISO 8601 date.`)
  return d
}

/** `?account_id=&from=&to=&limit=&before=`: newest first, `next_before` pages on. */
export async function listRequests (ctx: AdminContext, query: unknown = {}): Promise<{ data: RequestLogView[], has_more: boolean, next_before: string | null }> {
  const q = bodyObject(query ?? {})
  onlyFields(q, new Set(['account_id', 'idempotency_key', 'from', 'to', 'limit', 'before']))
  const accountId = q.get('account_id')
  if (accountId !== undefined && typeof accountId !== 'string') throw requestInvalid('account_id', 'account_id must be a string.')
  const idempotencyKey = q.get('idempotency_key')
  if (idempotencyKey !== undefined && typeof idempotencyKey !== 'string') throw requestInvalid('idempotency_key', 'idempotency_key must be a string.')
  const before = q.get('before')
  if (before !== undefined && typeof before !== 'string') throw requestInvalid('before', 'before must be a cursor string.')
  const from = dateParam('from', q.get('from'))
  const to = dateParam('to', q.get('to'))
  // Rows still queued in this process are written first. A failed insert stays queued for the
  // writer's own retry (and is reported by it); the listing then shows what is stored.
  await ctx.flushRequestLog?.().catch(() => {})
  let page
  try {
    page = await ctx.store.requestLog.list({
      limit: pageLimit(q.get('limit')),
      ...(accountId === undefined ? {} : { accountId }),
      ...(idempotencyKey === undefined ? {} : { idempotencyKey }),
      ...(from === undefined ? {} : { from }),
      ...(to === undefined ? {} : { to }),
      ...(before === undefined ? {} : { before })
    })
  } catch (err) {
    if (err instanceof InvalidCursorError) throw requestInvalid('before', 'before is not a cursor this API returned.')
    throw err
  }
  return { data: page.rows.map(requestLogView), has_more: page.nextBefore !== null, next_before: page.nextBefore }
}
