// The upstream plugin meets jobs only through the translator it looks up per operation
// (plugins/concerns/metering/translator.ts). Jobs' lookup over the passthrough: a create's and a poll's
// answer are written by jobs, a poll and a download go to the job's own provider, the request
// edits and the meter stay the passthrough's, and every other operation gets the passthrough
// itself. Looked up per request, so the lookup must hand back objects built once.
import Fastify from 'fastify'
import t from 'tap'
import { loadConfig } from '../plugins/apps/gateway/config.js'
import { compilePlan } from '../plugins/apps/gateway/plan.js'
import { createJobs, type ProviderReader } from '../plugins/concerns/jobs/index.js'
import { passthrough } from '../plugins/concerns/metering/index.js'
import { createWallet } from '../plugins/concerns/wallet/index.js'
import { mockEnv, REPO_CONFIG } from './helpers/gateway.js'
import { ManualClock, sqliteTestBackend } from './helpers/store.js'

t.test('each job role gets its translator over the passthrough; other operations the passthrough itself', async (t) => {
  const backend = sqliteTestBackend()
  t.teardown(() => backend.cleanup())
  const clock = new ManualClock()
  const store = await backend.open({ clock })
  const { config } = loadConfig(REPO_CONFIG, { ...process.env, ...mockEnv('http://127.0.0.1:9') })
  const calls: string[] = []
  const reader: ProviderReader = {
    get: async (provider, path) => { calls.push(`${provider} ${path}`); throw new Error('not called here') },
    close: async () => {}
  }
  const app = Fastify()
  t.teardown(() => app.close())
  const plan = compilePlan(config)
  const jobs = createJobs({ plan, jobs: store.jobs, wallet: createWallet({ ledger: store.ledger }), clock, log: app.log, reader })
  t.teardown(() => jobs.close())
  const lookup = jobs.translatorFor(passthrough)

  const seen = { create: 0, poll: 0, content: 0, other: 0 }
  for (const op of plan.operations.list()) {
    const tr = lookup(op)
    t.equal(lookup(op), tr, `${op.name}: the same translator at every lookup (nothing built per request)`)
    t.equal(tr.requestBody, passthrough.requestBody, `${op.name}: the passthrough's request edits`)
    t.equal(tr.meter, passthrough.meter, `${op.name}: the passthrough's meter`)
    const role = op.job?.role
    if (role === 'create') {
      seen.create++
      t.type(tr.answer, 'function', `${op.name}: jobs write a create's answer (job recorded, ids swapped)`)
      t.equal(tr.target, undefined, `${op.name}: a create goes to the model's pool`)
    } else if (role === 'poll') {
      seen.poll++
      t.type(tr.answer, 'function', `${op.name}: jobs read a poll's answer (the job ended once)`)
      t.type(tr.target, 'function', `${op.name}: a poll goes to the job's own provider`)
    } else if (role === 'content') {
      seen.content++
      t.equal(tr.answer, undefined, `${op.name}: a download streams through the relay and its meter`)
      t.type(tr.target, 'function', `${op.name}: a download goes to the job's own provider`)
    } else {
      seen.other++
      t.equal(tr, passthrough, `${op.name}: the passthrough`)
    }
  }
  t.ok(seen.create >= 3 && seen.poll >= 3 && seen.content >= 1 && seen.other > 10, `every kind of operation was looked up (${JSON.stringify(seen)})`)
  t.same(calls, [], 'picking a translator calls no provider')
})
