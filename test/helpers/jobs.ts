// Job tests: a config whose watcher the test drives by hand, the real plugins/concerns/jobs watcher on a
// test gateway's own store and clock, and small clients for creates and polls.
import { request } from 'node:http'
import type { JobsConfig } from '../../plugins/foundation/config/types.js'
import { compilePlan } from '../../plugins/apps/gateway/plan.js'
import { createJobs, type Jobs } from '../../plugins/concerns/jobs/index.js'
import { createStatusReader, openUpstreams } from '../../plugins/concerns/upstream/index.js'
import { createWallet } from '../../plugins/concerns/wallet/index.js'
import type { TestGateway } from './gateway.js'
import { ledgerState, settledRow, type LedgerState } from './billing.js'
import { writeTestConfig, type TestConfig } from './test-config.js'

/**
 * gateway.yaml with the jobs section replaced: by default no background watcher (the test calls
 * tick()), the first check and backoff at 0 so every round sees every running job, and a max
 * age of one hour.
 */
export function jobsTestConfig (jobs: Partial<Omit<JobsConfig, 'watcher'>> & { watcher?: Partial<JobsConfig['watcher']> } = {}): TestConfig {
  return writeTestConfig((c) => {
    c.jobs = {
      max_age_ms: jobs.max_age_ms ?? 3_600_000,
      watcher: { enabled: false, interval_ms: 1000, batch: 500, claim_ms: 60_000, first_check_ms: 0, backoff_ms: 0, max_backoff_ms: 0, ...(jobs.watcher ?? {}) }
    }
  })
}

/** The real job watcher (and the rest of plugins/concerns/jobs) on a test gateway's store, clock and config, wired as the composition root wires it. */
export function jobsOf (gw: TestGateway): Jobs {
  const { store, clock } = gw.services
  const plan = compilePlan(gw.config)
  // Its own upstreams, closed with it (the gateway's are the gateway's).
  const upstreams = openUpstreams(plan.upstream)
  const reader = { ...createStatusReader(upstreams), close: async () => { await upstreams.close() } }
  return createJobs({ plan, jobs: store.jobs, wallet: createWallet({ ledger: store.ledger }), clock, log: gw.app.log, reader })
}

export interface Created { id: string, status: string }

/** POST /v1/videos as JSON; `mock` are x-mock-* headers (the mock job's fate). */
export async function createVideo (gw: TestGateway, mock: Record<string, string> = {}, auth = gw.auth): Promise<Created> {
  const res = await fetch(`${gw.url}/v1/videos`, {
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json', ...mock },
    body: JSON.stringify({ model: 'openai/sora-2', prompt: 'a lighthouse at dusk', seconds: '4' })
  })
  if (res.status !== 200) throw new Error(`create answered ${res.status}: ${await res.text()}`)
  return await res.json() as Created
}

/** GET a path as is (no URL normalisation: `..` stays `..`), answering status and body text. */
export async function rawGet (gw: TestGateway, path: string, headers: Record<string, string>): Promise<{ status: number, body: string, headers: Record<string, string | string[] | undefined> }> {
  const url = new URL(gw.url)
  return await new Promise((resolve, reject) => {
    const req = request({ host: url.hostname, port: url.port, method: 'GET', path, headers }, (res) => {
      const parts: Buffer[] = []
      res.on('data', (d: Buffer) => parts.push(d))
      res.on('end', () => { resolve({ status: res.statusCode ?? 0, body: Buffer.concat(parts).toString('utf8'), headers: res.headers }) })
      res.on('error', reject)
    })
    req.on('error', reject)
    req.end()
  })
}

/**
 * Ledger state once the request `requestId` settled: a request settles after its answer is sent,
 * and its request log row is written once its settle ended, so this waits for that row. Without
 * an id it only flushes the rows already queued, which says nothing of a settle still running.
 */
export async function settledLedger (gw: TestGateway, requestId?: string): Promise<LedgerState> {
  await gw.app.ready()
  if (requestId === undefined) await gw.services.requestLog.flush()
  else await settledRow(gw, requestId)
  return await ledgerState(gw)
}
