// The wallet alone writes the ledger: every hold is created, renewed, posted and released
// through plugins/concerns/wallet (jobs included), and so are credits and key-usage resets; other modules
// may read a wallet's state or entries, never write. The store implementations
// (plugins/foundation/store/) are the ledger itself. This test reads the production sources (plugins/,
// bin/, index.ts) and fails on a module outside plugins/concerns/wallet/ and plugins/foundation/store/ that calls a
// ledger write, hands the store's ledger to anything but createWallet, or names the LedgerStore
// type (a module holding one could write through it).
import { readFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import t from 'tap'
import { ROOT, tsSources } from './helpers/paths.js'

/** The methods of the LedgerStore interface, read from its declaration. */
function ledgerMethods (): string[] {
  const text = readFileSync(join(ROOT, 'plugins/foundation/store/ledger/types.ts'), 'utf8')
  const start = text.indexOf('export interface LedgerStore {')
  if (start === -1) throw new Error('no LedgerStore interface in plugins/foundation/store/ledger/types.ts')
  const body = text.slice(start, text.indexOf('\n}', start))
  return [...body.matchAll(/^ {2}(\w+)\s*\(/gm)].map((m) => m[1] as string)
}

/** The ledger's reads: anything may call these. Every other method of LedgerStore is a write. */
const READS: ReadonlySet<string> = new Set(['wallet', 'entries', 'keyUsage', 'openHolds'])

/** What a module outside the wallet does to the ledger that only the wallet may do. */
function ledgerWrites (text: string, writes: readonly string[]): string[] {
  const found: string[] = []
  const names = writes.join('|')
  // A write method called on anything named ledger (`store.ledger.hold(`, `deps.ledger?.settle(`).
  for (const m of text.matchAll(new RegExp(`\\bledger\\b[\\s)\\]!]*\\??\\.\\s*(${names})\\s*\\(`, 'g'))) found.push(`calls ledger.${m[1] ?? ''}`)
  // The store's ledger handed on (an alias could write): only createWallet({ ledger: … }) takes it.
  for (const m of text.matchAll(/\bstore\s*\??\.\s*ledger\b(?!\s*\??\.\s*(\w+)\s*\()/g)) {
    const before = text.slice(Math.max(0, (m.index ?? 0) - 80), m.index)
    if (!/createWallet\(\{\s*ledger:\s*[\w.]*$/.test(before)) found.push('hands on store.ledger')
  }
  // A read method of the store's ledger is fine; anything else called on it is not.
  for (const m of text.matchAll(/\bstore\s*\??\.\s*ledger\s*\??\.\s*(\w+)\s*\(/g)) {
    if (!READS.has(m[1] ?? '') && !writes.includes(m[1] ?? '')) found.push(`calls store.ledger.${m[1] ?? ''}`)
  }
  // Destructured out of a store: `const { ledger } = store`.
  if (/\{[^}]*\bledger\b[^}]*\}\s*=\s*[\w.]*\bstore\b/.test(text)) found.push('destructures ledger from a store')
  if (/\bLedgerStore\b/.test(text)) found.push('names the LedgerStore type')
  if (/store\/ledger\/retry\.js/.test(text)) found.push('imports the ledger write retry')
  return found
}

const WRITES = ledgerMethods().filter((m) => !READS.has(m))

t.test('the ledger interface is read as declared: its writes are what the wallet owns', async (t) => {
  for (const m of ['hold', 'settle', 'renew', 'release', 'reapExpired', 'credit', 'resetKeyUsage']) t.ok(WRITES.includes(m), `${m} is a write`)
  for (const m of READS) t.ok(ledgerMethods().includes(m), `${m} is a method of LedgerStore (a read)`)
})

t.test('the scan sees a write, an alias and a type, and lets reads and createWallet pass', async (t) => {
  t.same(ledgerWrites('await deps.ledger.settle({ holdId })', WRITES), ['calls ledger.settle'])
  t.same(ledgerWrites('await ctx.store.ledger\n  .release(id)', WRITES), ['calls ledger.release'])
  t.same(ledgerWrites('void (store.ledger).hold(x)', WRITES), ['calls ledger.hold', 'hands on store.ledger'])
  t.same(ledgerWrites('const l = services.store.ledger; await l.renew(h, 1)', WRITES), ['hands on store.ledger'])
  t.same(ledgerWrites('const { ledger, jobs } = gw.services.store', WRITES), ['destructures ledger from a store'])
  t.same(ledgerWrites("import type { LedgerStore } from '../store/ledger/types.js'", WRITES), ['names the LedgerStore type'])
  t.same(ledgerWrites('await ctx.store.ledger.wallet(id); await store.ledger.entries(id, {})', WRITES), [], 'reads pass')
  t.same(ledgerWrites('await createWallet({ ledger: ctx.store.ledger }).credit(input)', WRITES), [], 'the wallet made over the store\'s ledger passes')
})

t.test('no module outside plugins/concerns/wallet/ and plugins/foundation/store/ writes the ledger', async (t) => {
  const files = [...tsSources(join(ROOT, 'plugins')), ...tsSources(join(ROOT, 'bin')), join(ROOT, 'index.ts')]
    .filter((f) => !/^plugins\/(concerns\/wallet|foundation\/store)\//.test(relative(ROOT, f).split('\\').join('/')))
  t.ok(files.length > 100, `scanned the production tree (${files.length} files)`)
  for (const file of files) {
    t.strictSame(ledgerWrites(readFileSync(file, 'utf8'), WRITES), [], `${relative(ROOT, file)} writes no ledger`)
  }
})

t.test('jobs end their holds through the wallet: plugins/concerns/jobs names no ledger at all', async (t) => {
  for (const file of tsSources(join(ROOT, 'plugins/concerns/jobs'))) {
    t.notMatch(readFileSync(file, 'utf8'), /\bledger\s*[?:.]|store\/ledger\//, `${relative(ROOT, file)} holds no ledger`)
  }
})
