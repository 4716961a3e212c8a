// `npm run demo`: the gateway on the default gateway.yaml in front of local mock providers,
// with a funded demo account and key, so a newcomer sees an answer with no provider account.
import { mkdirSync } from 'node:fs'
import { loadConfig } from '../plugins/config/index.js'
import { buildServer } from '../plugins/server/server.js'
import { openServices } from '../plugins/gateway/index.js'
import { parseMoney } from '../plugins/pricing/money.js'
import { startMockUpstream } from '../test/fixtures/mock-upstream.js'
import { mockEnv } from '../test/helpers/gateway.js'

const dataDir = process.env.GATEWAY_DATA_DIR ?? './data/demo'
mkdirSync(dataDir, { recursive: true })
const mock = await startMockUpstream({ record: false })
const port = Number(process.env.PORT ?? 8080)
const { config } = loadConfig(process.env.GATEWAY_CONFIG ?? './gateway.yaml', { ...process.env, ...mockEnv(mock.url), PORT: String(port), HOST: '127.0.0.1' })
const services = await openServices({ dataDir, secret: process.env.GATEWAY_SECRET, defaultTier: config.limits.default_tier })
const adminToken = process.env.GATEWAY_ADMIN_TOKEN ?? 'demo-admin-token'
const app = await buildServer({ config, services, adminToken, logger: { level: 'warn' } })

const account = await services.store.accounts.create({ name: 'demo' })
const created = await services.store.keys.create({ accountId: account.id, name: 'demo key' })
if (!created.ok) throw new Error(created.error)
await services.store.ledger.credit({ accountId: account.id, amount: parseMoney('5.00'), kind: 'topup', postingId: `demo:${account.id}` })
await services.store.accounts.markToppedUp(account.id)
await app.listen({ port, host: '127.0.0.1' })

const url = `http://127.0.0.1:${port}`
const key = created.value.plaintext
process.stdout.write(`
Model Gateway demo on ${url} (mock providers at ${mock.url}; data in ${dataDir})
Account ${account.id} has 5.00 in its wallet. Demo key (shown once): ${key}

  curl -s ${url}/v1/chat/completions -H "Authorization: Bearer ${key}" \\
    -H 'content-type: application/json' \\
    -d '{"model":"openai/gpt-4o-mini","messages":[{"role":"user","content":"Hello gateway"}]}'

  curl -sN ${url}/v1/messages -H "x-api-key: ${key}" -H 'content-type: application/json' \\
    -d '{"model":"anthropic/claude-sonnet-4","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"Hi"}]}'

  curl -s ${url}/admin/v1/accounts/${account.id}/wallet -H "Authorization: Bearer ${adminToken}"
  curl -s "${url}/admin/v1/requests?account_id=${account.id}" -H "Authorization: Bearer ${adminToken}"

  // Node, with the official SDK (only the base URL changes):
  import OpenAI from 'openai'
  const client = new OpenAI({ baseURL: '${url}/v1', apiKey: '${key}' })
  const r = await client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'Hello' }] })
  console.log(r.choices[0].message.content)

Ctrl-C stops it.
`)
// The stores close after the gateway has closed (its settlements and request log flush first).
const stop = (): void => {
  app.close().then(async () => { await services.close(); await mock.close() }).then(() => process.exit(0), () => process.exit(1))
}
process.once('SIGINT', stop)
process.once('SIGTERM', stop)
