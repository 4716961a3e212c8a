// Hostile local user: the embedded store's directory is created 0700 and every file in it
// (SQLite database, -wal, -shm, the generated server secret) is 0600, also when an earlier
// version left them world-readable. SQLite only: PostgreSQL keeps nothing on the gateway's disk.
import { chmodSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { SECRET_FILE_NAME } from '../../plugins/foundation/keys/server-secret.js'
import { SQLITE_FILE_NAME } from '../../plugins/foundation/store/sqlite/sqlite-store.js'
import { startTestGateway } from '../helpers/gateway.js'

const mode = (path: string): string => (statSync(path).mode & 0o777).toString(8)

/** Runs a request that writes (hold, settle, request log), so the WAL and its index exist. */
async function busyGateway (dataDir: string): Promise<() => Promise<void>> {
  // No GATEWAY_SECRET: embedded mode generates the secret file in the data directory.
  const gw = await startTestGateway({ services: { dataDir, secret: undefined } })
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { ...gw.auth, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] })
  })
  await res.arrayBuffer()
  return async () => await gw.close()
}

t.test('a new data directory is 0700 and its files 0600', async (t) => {
  // Permissive umask, as on many hosts: the modes must not depend on it.
  const previous = process.umask(0o022)
  t.teardown(() => { process.umask(previous) })
  const root = mkdtempSync(join(tmpdir(), 'gw-datadir-'))
  t.teardown(() => rmSync(root, { recursive: true, force: true }))
  const dataDir = join(root, 'nested', 'data')
  const close = await busyGateway(dataDir)
  t.teardown(close)
  t.equal(mode(dataDir), '700', 'data directory')
  for (const name of [SQLITE_FILE_NAME, `${SQLITE_FILE_NAME}-wal`, `${SQLITE_FILE_NAME}-shm`, SECRET_FILE_NAME]) {
    t.equal(mode(join(dataDir, name)), '600', name)
  }
})

t.test('files an earlier version left world-readable are narrowed at start', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'gw-datadir-'))
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }))
  const first = await busyGateway(dataDir)
  await first()
  for (const name of [SQLITE_FILE_NAME, SECRET_FILE_NAME]) chmodSync(join(dataDir, name), 0o644)
  writeFileSync(join(dataDir, `${SQLITE_FILE_NAME}-wal`), '', { mode: 0o644 })
  chmodSync(join(dataDir, `${SQLITE_FILE_NAME}-wal`), 0o644)
  const second = await busyGateway(dataDir)
  t.teardown(second)
  for (const name of [SQLITE_FILE_NAME, `${SQLITE_FILE_NAME}-wal`, `${SQLITE_FILE_NAME}-shm`, SECRET_FILE_NAME]) {
    t.equal(mode(join(dataDir, name)), '600', `${name} is 0600 again`)
  }
})
