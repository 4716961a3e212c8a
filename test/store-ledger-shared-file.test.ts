// Two SQLite stores on one database file, as two processes (two gateways, or a gateway and the
// CLI) would have: a hold one of them opened and another renewed, closed or reaped is settled
// by the first from the table as it is now, never from what the first wrote. The store keeps
// the holds it opened in memory to save a read per settle; these are the cases where that copy
// is out of date.
import { join } from 'node:path'
import t, { type Test } from 'tap'
import type { Store } from '../plugins/foundation/store/index.js'
import { lockHolder } from './helpers/locks.js'
import { ManualClock, sqliteTestBackend } from './helpers/store.js'

const TTL = 60_000
const FUNDS = 10_000n

async function twoStores (t: Test): Promise<{ mine: Store, other: Store, clock: ManualClock, accountId: string }> {
  const backend = sqliteTestBackend()
  t.teardown(() => backend.cleanup())
  const clock = new ManualClock('2030-01-01T00:00:00.000Z')
  const mine = await backend.open({ clock })
  const other = await backend.open({ clock })
  const { id } = await mine.accounts.create({ name: 'shared' })
  await mine.ledger.credit({ accountId: id, amount: FUNDS, kind: 'topup', postingId: `fund-${id}` })
  return { mine, other, clock, accountId: id }
}

async function openHold (store: Store, accountId: string, amount: bigint): Promise<string> {
  const held = await store.ledger.hold({ accountId, amount, floor: 0n, requestId: `req-${amount}`, ttlMs: TTL })
  if (!held.ok) throw new Error(`hold refused: ${held.error}`)
  return held.holdId
}

t.test('a hold renewed by another process is posted, not expired, at its first expiry', async (t) => {
  const { mine, other, clock, accountId } = await twoStores(t)
  const holdId = await openHold(mine, accountId, 500n)
  clock.advance(TTL - 1_000)
  const renewed = await other.ledger.renew(holdId, TTL)
  t.equal(renewed.renewed, true, 'the other store moved the expiry')
  clock.advance(2_000) // past the expiry the first store wrote, before the renewed one
  const settled = await mine.ledger.settle({ holdId, amount: 300n, requestId: 'req-500' })
  t.same({ posted: settled.posted, duplicate: settled.duplicate }, { posted: 300n, duplicate: false }, 'charged: the table says the hold is alive')
  t.same(await mine.ledger.wallet(accountId), { accountId, balance: FUNDS - 300n, held: 0n, available: FUNDS - 300n, unrecoveredAt: null })
})

t.test('a hold closed by another process is a duplicate here, charged once', async (t) => {
  const { mine, other, accountId } = await twoStores(t)
  const holdId = await openHold(mine, accountId, 500n)
  const first = await other.ledger.settle({ holdId, amount: 200n, requestId: 'req-500' })
  t.equal(first.posted, 200n, 'the other store posted')
  const second = await mine.ledger.settle({ holdId, amount: 400n, requestId: 'req-500' })
  t.same({ posted: second.posted, duplicate: second.duplicate }, { posted: 0n, duplicate: true }, 'nothing posted twice')
  t.same(await mine.ledger.wallet(accountId), { accountId, balance: FUNDS - 200n, held: 0n, available: FUNDS - 200n, unrecoveredAt: null })
  const charges = (await mine.ledger.entries(accountId, { limit: 10 })).filter((e) => e.kind === 'charge')
  t.same(charges.map((e) => e.amount), [-200n], 'one charge entry')
})

t.test('a hold reaped by another process posts nothing here', async (t) => {
  const { mine, other, clock, accountId } = await twoStores(t)
  const holdId = await openHold(mine, accountId, 500n)
  clock.advance(TTL)
  t.equal(await other.ledger.reapExpired(), 1, 'the other store expired it')
  const late = await mine.ledger.settle({ holdId, amount: 100n, requestId: 'req-500' })
  t.same({ posted: late.posted, duplicate: late.duplicate }, { posted: 0n, duplicate: true })
  t.same(await mine.ledger.wallet(accountId), { accountId, balance: FUNDS, held: 0n, available: FUNDS, unrecoveredAt: null })
})

t.test('a hold of this process released twice here: the second is a duplicate', async (t) => {
  const { mine, accountId } = await twoStores(t)
  const holdId = await openHold(mine, accountId, 500n)
  t.same(await mine.ledger.release(holdId), { released: 500n, duplicate: false })
  t.same(await mine.ledger.release(holdId), { released: 0n, duplicate: true })
  t.same(await mine.ledger.wallet(accountId), { accountId, balance: FUNDS, held: 0n, available: FUNDS, unrecoveredAt: null })
})

t.test('opening a second store on the file keeps the first one\'s locks on it', async (t) => {
  // Closing any descriptor of a file drops every POSIX lock the process holds on it: a store
  // that opened and closed the existing file to create it would take the first one's.
  const backend = sqliteTestBackend()
  t.teardown(() => backend.cleanup())
  const first = await backend.open({})
  t.teardown(() => first.close())
  const file = join(backend.location, 'gateway.db')
  t.equal(lockHolder(file, 0x40000002, 510), process.pid, 'the first store\'s connection holds its shared lock on the database file')
  const second = await backend.open({})
  t.teardown(() => second.close())
  t.equal(lockHolder(file, 0x40000002, 510), process.pid, 'still held once a second store opened the file')
})
