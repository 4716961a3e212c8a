// `npm run demo`: the gateway on the default gateway.yaml in front of local mock providers,
// with a funded demo account and key, so a newcomer sees an answer with no provider account.
// The admin API is where `npm start` has it (127.0.0.1:8081, gateway.yaml's `admin`), so the
// admin lines printed here are the ones that work under `npm start` too.
import { randomBytes } from 'node:crypto'
import { mkdirSync } from 'node:fs'
import { adminListenAddress, adminStartupProblem, buildAdminServer } from '../plugins/apps/server/admin-server.js'
import { loadConfig } from '../plugins/apps/gateway/config.js'
import { buildServer } from '../plugins/apps/server/server.js'
import { openServices } from '../plugins/apps/gateway/index.js'
import { parseMoney } from '../plugins/foundation/pricing/money.js'
import { createWallet } from '../plugins/concerns/wallet/wallet.js'
import { startMockUpstream } from '../test/fixtures/mock-upstream.js'
import { mockEnv } from '../test/helpers/gateway.js'

/** The demo's own failures are one line on stderr and exit 1, never a stack trace. */
function fail (line: string): never {
  process.stderr.write(`npm run demo: ${line}\n`)
  process.exit(1)
}

const dataDir = process.env.GATEWAY_DATA_DIR ?? './data/demo'
const port = Number(process.env.PORT ?? 8080)
if (!Number.isSafeInteger(port) || port < 0 || port > 65535) fail('PORT must be a port number (0 to 65535)')
mkdirSync(dataDir, { recursive: true })
const mock = await startMockUpstream({ record: false })
const config = (() => {
  try {
    return loadConfig(process.env.GATEWAY_CONFIG ?? './gateway.yaml', { ...process.env, ...mockEnv(mock.url), PORT: String(port), HOST: '127.0.0.1' }).config
  } catch (err) {
    return fail(err instanceof Error ? err.message.split('\n', 1)[0] ?? '' : String(err))
  }
})()
// A token given is checked as `npm start` checks it; none given: one is made for this run.
const givenToken = process.env.GATEWAY_ADMIN_TOKEN
const adminProblem = adminStartupProblem(givenToken, config.admin)
if (adminProblem !== null) fail(adminProblem.replace('the gateway does not start', 'the demo does not start'))
const adminToken = givenToken !== undefined && givenToken !== '' ? givenToken : randomBytes(24).toString('hex')
const adminAt = adminListenAddress(config.admin)
const services = await openServices({ dataDir, secret: process.env.GATEWAY_SECRET, defaultTier: config.limits.default_tier })
const app = await buildServer({ config, services, secretNotice: false, logger: { level: 'warn' } })
const admin = await buildAdminServer({
  config,
  store: services.store,
  token: adminToken,
  clock: services.clock,
  logger: { level: 'warn' },
  flushRequestLog: async () => { await services.requestLog.flush() }
})

const account = await services.store.accounts.create({ name: 'demo' })
const created = await services.store.keys.create({ accountId: account.id, name: 'demo key' })
if (!created.ok) fail(`creating the demo key: ${created.error}`)
await createWallet({ ledger: services.store.ledger }).credit({ accountId: account.id, amount: parseMoney('5.00'), kind: 'topup', postingId: `demo:${account.id}` })
await services.store.accounts.markToppedUp(account.id)
try {
  await app.listen({ port, host: '127.0.0.1' })
  await admin.listen(adminAt)
} catch (err) {
  const code = (err as NodeJS.ErrnoException).code
  fail(code === 'EADDRINUSE'
    ? `port ${port} or ${adminAt.port} is in use (another demo or \`npm start\`?); set PORT or GATEWAY_ADMIN_PORT`
    : `cannot listen: ${err instanceof Error ? err.message : String(err)}`)
}

const url = `http://127.0.0.1:${port}`
const adminAddress = admin.server.address()
const adminUrl = `http://${adminAt.host}:${adminAddress !== null && typeof adminAddress === 'object' ? adminAddress.port : adminAt.port}`
const key = created.value.plaintext
const tokenLine = givenToken === undefined || givenToken === ''
  ? `Admin token for this run (set GATEWAY_ADMIN_TOKEN to choose one): ${adminToken}`
  : 'Admin token: the GATEWAY_ADMIN_TOKEN you set'
process.stdout.write(`
Model Gateway demo on ${url} (mock providers at ${mock.url}; data in ${dataDir})
Account ${account.id} has 5.00 in its wallet. Demo key (shown once): ${key}

  export GATEWAY_KEY=${key}

  curl -s ${url}/v1/chat/completions -H "Authorization: Bearer $GATEWAY_KEY" \\
    -H 'content-type: application/json' \\
    -d '{"model":"openai/gpt-4o-mini","messages":[{"role":"user","content":"Hello gateway"}]}'

See the charge: the admin API on ${adminUrl}, as under \`npm start\`.
${tokenLine}

  curl -s ${adminUrl}/admin/v1/accounts/${account.id}/wallet -H "Authorization: Bearer ${adminToken}"
  curl -s "${adminUrl}/admin/v1/requests?account_id=${account.id}" -H "Authorization: Bearer ${adminToken}"

or the CLI, on the same data (no token needed):

  GATEWAY_DATA_DIR=${dataDir} node dist/bin/model-gateway.js wallet get ${account.id}
  GATEWAY_DATA_DIR=${dataDir} node dist/bin/model-gateway.js requests list --account ${account.id}

Ctrl-C stops it.
`)
// The stores close after the gateway has closed (its settlements and request log flush first).
const stop = (): void => {
  app.close().then(async () => { await admin.close(); await services.close(); await mock.close() }).then(() => process.exit(0), () => process.exit(1))
}
process.once('SIGINT', stop)
process.once('SIGTERM', stop)
