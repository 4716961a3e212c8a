// What the billing tests expect, computed by the tests themselves: prices are read from the
// YAML as the decimal strings the operator wrote and turned into exact rationals here (not by
// plugins/foundation/pricing), a request's cost is summed with bigint and rounded up once; and what the
// gateway did is read back from its real store (ledger entries, open holds, request log rows).
import type { Test } from 'tap'
import type { RequestLogRow } from '../../plugins/foundation/store/request-log/types.js'
import { allEntries } from './ledger.js'
import { seedFundedKey } from './store.js'
import type { LedgerEntry } from '../../plugins/foundation/store/ledger/types.js'
import type { Store } from '../../plugins/foundation/store/types.js'
import type { TestGateway } from './gateway.js'
import { modelOf, readRepoConfig, type RawConfig } from './test-config.js'

/** Nano-units per currency unit (docs/money.md's minor unit). */
export const NANOS = 1_000_000_000n

/** "0.000015" → 15_000n: the decimal string read digit by digit, never through a float. */
export function nanos (decimal: string): bigint {
  const m = /^(\d+)(?:\.(\d{1,9}))?$/.exec(decimal)
  if (m === null) throw new Error(`not a money decimal: ${decimal}`)
  return BigInt(m[1] ?? '0') * NANOS + BigInt((m[2] ?? '').padEnd(9, '0'))
}

/** 25_000_000_000n → "25.000000000": a decimal string the admin API and the seed accept. */
export function decimal (n: bigint): string {
  const sign = n < 0n ? '-' : ''
  const abs = n < 0n ? -n : n
  return `${sign}${abs / NANOS}.${(abs % NANOS).toString().padStart(9, '0')}`
}

/** A model's price list as the tests read it: nano-units per `per` billed units. */
export interface TestPrice {
  unit: string
  per: bigint
  input?: bigint
  output?: bigint
  cachedInput?: bigint
  unitPrice?: bigint
  /** Per image by quality, then size (`image_prices`): nano-units per image, whatever `per` is. */
  imagePrices?: TestImagePrices
}

/** A model's `image_prices` table as the tests read it. */
export interface TestImagePrices {
  prices: Record<string, Record<string, bigint>>
  defaultQuality?: string
  defaultSize?: string
}

/** The quality and size an image was rendered at (the answer's `quality` and `size`). */
export interface ImageTier {
  quality: string
  size: string
}

function imagePricesOf (raw: unknown): TestImagePrices | undefined {
  if (raw === undefined) return undefined
  const table = raw as { prices: Record<string, Record<string, string>>, default_quality?: string, default_size?: string }
  const prices: Record<string, Record<string, bigint>> = {}
  for (const [quality, sizes] of Object.entries(table.prices)) {
    prices[quality] = Object.fromEntries(Object.entries(sizes).map(([size, p]) => [size, nanos(p)]))
  }
  const out: TestImagePrices = { prices }
  if (table.default_quality !== undefined) out.defaultQuality = table.default_quality
  if (table.default_size !== undefined) out.defaultSize = table.default_size
  return out
}

/** The price of one image of `tier` in the table; throws when the table does not price it. */
export function imageTierPrice (table: TestImagePrices, tier: ImageTier): bigint {
  const p = table.prices[tier.quality]?.[tier.size]
  if (p === undefined) throw new Error(`image_prices has no ${tier.quality} ${tier.size}`)
  return p
}

export function priceOf (modelId: string, config: RawConfig = readRepoConfig()): TestPrice {
  const p = modelOf(config, modelId).pricing as Record<string, unknown> | undefined
  if (p === undefined) throw new Error(`model ${modelId} has no pricing`)
  const money = (field: string): bigint | undefined => typeof p[field] === 'string' ? nanos(p[field]) : undefined
  const price: TestPrice = { unit: String(p.unit), per: typeof p.per === 'number' ? BigInt(p.per) : 1n }
  const input = money('input')
  const output = money('output')
  const cachedInput = money('cached_input')
  const unitPrice = money('unit_price')
  if (input !== undefined) price.input = input
  if (output !== undefined) price.output = output
  if (cachedInput !== undefined) price.cachedInput = cachedInput
  if (unitPrice !== undefined) price.unitPrice = unitPrice
  const imagePrices = imagePricesOf(p.image_prices)
  if (imagePrices !== undefined) price.imagePrices = imagePrices
  return price
}

/** Billable quantities of one request; absent fields are 0. */
export interface Units {
  inputTokens?: number
  outputTokens?: number
  /** Part of inputTokens served from the provider's cache. */
  cachedInputTokens?: number
  images?: number
  /**
   * The quality and size the images were rendered at: required for a model priced by
   * `image_prices` (each image costs that entry).
   */
  imageTier?: ImageTier
  /** Seconds of input audio, in whole milliseconds (the test picks durations it knows exactly). */
  audioMillis?: number
  characters?: number
  calls?: number
}

const big = (n: number | undefined): bigint => BigInt(n ?? 0)

/**
 * The cost of one request: every quantity × its price, summed exactly as a fraction of
 * nano-units over `per` (× 1000 for milliseconds), and rounded up once. An `image_prices` entry
 * is per image, whatever `per` is; the token terms still count per `per`.
 */
export function expectedCost (price: TestPrice, u: Units): bigint {
  let num = 0n
  let den = price.per
  const tokens = (): bigint => {
    const input = big(u.inputTokens)
    const cached = big(u.cachedInputTokens)
    let sum = 0n
    if (price.input !== undefined) sum += (input - cached) * price.input + cached * (price.cachedInput ?? price.input)
    if (price.output !== undefined) sum += big(u.outputTokens) * price.output
    return sum
  }
  const unit = price.unitPrice ?? 0n
  switch (price.unit) {
    case 'token': num = tokens(); break
    case 'image': {
      // unit_price counts per `per` images, an image_prices entry per image.
      let perImage = unit
      if (price.imagePrices !== undefined) {
        if (u.imageTier === undefined) throw new Error('a model priced by image_prices needs the rendered imageTier')
        perImage = imageTierPrice(price.imagePrices, u.imageTier) * price.per
      }
      num = big(u.images) * perImage + tokens()
      break
    }
    case 'audio_second': num = big(u.audioMillis) * unit; den = price.per * 1000n; break
    case 'character': num = big(u.characters) * unit; break
    case 'call': num = big(u.calls) * unit; break
    default: throw new Error(`unit ${price.unit} is not priced by these tests`)
  }
  return (num + den - 1n) / den
}

/** Unicode code points (a surrogate pair is one character). */
export function codePoints (s: string): number {
  return [...s].length
}

/** ceil(n / d) for non-negative integers. */
export function ceilDiv (n: number, d: number): number {
  return Number((BigInt(n) + BigInt(d) - 1n) / BigInt(d))
}

/** The gateway's text estimate (README: about four characters per token), for estimated usage. */
export function tokensFromChars (chars: number): number {
  return ceilDiv(chars, 4)
}

export async function sleep (ms: number): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, ms))
}

/**
 * The request log row of a request, once it exists. The row is queued right after the hold
 * is settled, so its presence also means the ledger has the request's final state.
 */
export async function settledRow (gw: TestGateway, requestId: string, timeoutMs = 15_000): Promise<RequestLogRow> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    await gw.services.requestLog.flush()
    const row = await gw.services.store.requestLog.get(requestId)
    if (row !== null) return row
    if (Date.now() > deadline) throw new Error(`no request log row for ${requestId} after ${timeoutMs} ms`)
    await sleep(10)
  }
}

/** Every request log row of an account, newest first, read page by page from `store`. */
export async function storeRows (store: Store, accountId: string): Promise<RequestLogRow[]> {
  const rows: RequestLogRow[] = []
  let before: string | undefined
  for (;;) {
    const page = await store.requestLog.list({ accountId, limit: 1000, ...(before === undefined ? {} : { before }) })
    rows.push(...page.rows)
    if (page.nextBefore === null) return rows
    before = page.nextBefore
  }
}

/** Every request log row of an account, newest first, read from the gateway's store. */
export async function accountRows (gw: TestGateway, accountId = gw.account.id): Promise<RequestLogRow[]> {
  return await storeRows(gw.services.store, accountId)
}

/**
 * Waits until the account has `count` request log rows (flushing every writer given: several
 * gateway instances may share one store), then answers them.
 */
export async function waitForRows (gws: readonly TestGateway[], count: number, timeoutMs = 30_000, accountId?: string): Promise<RequestLogRow[]> {
  const first = gws[0]
  if (first === undefined) throw new Error('no gateway')
  const deadline = Date.now() + timeoutMs
  for (;;) {
    await Promise.all(gws.map(async (gw) => { await gw.services.requestLog.flush() }))
    const rows = await accountRows(first, accountId)
    if (rows.length >= count) return rows
    if (Date.now() > deadline) throw new Error(`request log has ${rows.length} of ${count} rows after ${timeoutMs} ms`)
    await sleep(20)
  }
}

/** The wallet, its entries and open holds, read from the store. */
export interface LedgerState {
  balance: bigint
  held: bigint
  entries: LedgerEntry[]
  charges: LedgerEntry[]
  /** What the charges took, as a positive amount. */
  charged: bigint
  entriesSum: bigint
  openHolds: number
}

export async function ledgerState (gw: TestGateway, accountId = gw.account.id): Promise<LedgerState> {
  const ledger = gw.services.store.ledger
  // The open holds first: a settle closes its hold and posts its charge in one commit, so once
  // no hold is open, the balance and entries read after it hold every charge. Read at once on a
  // pool's connections, the balance could come from before a batch of settles and the holds
  // from after it (jobs-instances on PostgreSQL saw 15 charges, no open hold, and a balance
  // that had 1 of them: a watcher's group commit of 14 settles fell between the reads).
  const open = await ledger.openHolds(accountId)
  const [wallet, entries] = await Promise.all([ledger.wallet(accountId), allEntries(gw.services.store, accountId)])
  const charges = entries.filter((e) => e.kind === 'charge')
  return {
    balance: wallet.balance,
    held: wallet.held,
    entries,
    charges,
    charged: -charges.reduce((sum, e) => sum + e.amount, 0n),
    entriesSum: entries.reduce((sum, e) => sum + e.amount, 0n),
    openHolds: open.length
  }
}

/**
 * What a stopped gateway leaves (the shutdown tests): no hold open, nothing held, and the wallet
 * is `credit` less the costs of the account's request log rows.
 */
export async function checkWalletAgainstRows (t: Test, store: Store, accountId: string, rows: readonly RequestLogRow[], credit: bigint): Promise<void> {
  t.equal((await store.ledger.openHolds(accountId)).length, 0, 'no hold left open')
  const wallet = await store.ledger.wallet(accountId)
  t.equal(wallet.held, 0n, 'nothing held')
  const charged = rows.reduce((sum, r) => sum + (r.cost ?? 0n), 0n)
  t.equal(wallet.balance, credit - charged, 'balance = credit − the rows\' costs')
}

/** Tiny seeded PRNG (mulberry32): the same seed replays the same test. */
export function seededRandom (seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let x = a
    x = Math.imul(x ^ (x >>> 15), x | 1)
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61)
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296
  }
}

/** The admin API of a gateway started with `server: { adminToken }`. */
export interface AdminAnswer<T> {
  status: number
  json: T
}

export function adminClient (gw: TestGateway, token: string): <T = Record<string, unknown>>(method: string, path: string, body?: unknown) => Promise<AdminAnswer<T>> {
  return async <T>(method: string, path: string, body?: unknown): Promise<AdminAnswer<T>> => {
    const res = await fetch(`${gw.url}/admin/v1${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) })
    })
    return { status: res.status, json: await res.json() as T }
  }
}

/**
 * An account of `tier` with `credit` topped up (so every model is unlocked) and a key: the
 * property tests' fresh wallet per run (seedFundedKey with a decimal credit). `label` names the account.
 */
export async function fundedAccount (store: Store, credit: string, label: string, tier = 'free'): Promise<{ accountId: string, key: string }> {
  const { account, key } = await seedFundedKey(store, { account: label, key: `${label} key`, tier }, nanos(credit))
  return { accountId: account.id, key }
}
