// The gateway children run on a real store: embedded SQLite in a fresh temporary directory, or
// PostgreSQL when BENCH_DATABASE_URL is set (a fresh schema), seeded with one funded account
// and one key whose plaintext is fixed so the load generator can send it.
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { GatewayConfig } from '../../plugins/config/types.js'
import { openServices, type GatewayServices } from '../../plugins/gateway/services.js'
import { parseMoney } from '../../plugins/pricing/money.js'
import { randomSchemaName, TEST_SECRET } from '../../plugins/store/testing.js'

/** A legacy-format key, imported hash-only: the lookup path is the same HMAC + cache as for sk- keys. */
export const BENCH_KEY = 'gw_live_benchmark0123456789abcdef'

export async function openBenchServices (config: GatewayConfig): Promise<GatewayServices> {
  const databaseUrl = process.env.BENCH_DATABASE_URL
  const services = await openServices({
    secret: TEST_SECRET,
    defaultTier: config.limits.default_tier,
    ...(databaseUrl ? { databaseUrl, schema: randomSchemaName() } : { dataDir: mkdtempSync(join(tmpdir(), 'gw-bench-')) })
  })
  const account = await services.store.accounts.create({ name: 'bench', tier: 'enterprise' })
  const imported = await services.store.keys.importLegacy(account.id, BENCH_KEY, { name: 'bench' })
  if (!imported.ok) throw new Error(`bench key: ${imported.error}`)
  await services.store.ledger.credit({ accountId: account.id, amount: parseMoney('1000000000'), kind: 'topup', postingId: 'bench-seed' })
  await services.store.accounts.markToppedUp(account.id)
  return services
}
